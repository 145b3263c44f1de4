//! Dates a query names, and whether a record's own time falls on them.
//!
//! "What painting did Melanie show to Caroline on October 13, 2023?" names a
//! day; the turn that answers it ("Here's one I did last week. It's inspired by
//! the sunsets") was written that day, but nothing in its words says so: the
//! date lives in the record's time, not its text. So when a query names
//! a day or a month, a record whose own time (`timestamp`, `compressed_at`…)
//! falls on it is raised in the calibrated ranking (see
//! [`super::relevance::DATE_WEIGHT`]). Records without a time are left as they
//! are; a query naming no date changes nothing.
//!
//! Read forms (month names in full or as three-letter abbreviations, any case
//! when a day or year goes with them):
//!
//! - a day: `2023-10-13`, `October 13, 2023`, `Oct 13th 2023`, `13 October, 2023`;
//!   without the year (`on Oct 13`), that day of any year;
//! - a month: `October 2023`; `in October` (also `during`, `of`, `since`,
//!   `until`), that month of any year; a bare month must be capitalised and
//!   follow one of those words, so "may" and "march" as words name nothing;
//! - a year: `in 2023` (also `during`, `of`, `throughout`); a number alone
//!   (`port 2023`) names nothing;
//! - relative to today (UTC): `today`, `yesterday` (that day only), `3 days
//!   ago` (a day either side), `on Monday` and `last Monday` (the latest
//!   Monday before today), `this Monday` (this week's), `this week`, `last
//!   week` (Monday to Sunday), `this month`, `last month`, `this year`, `last
//!   year`.
//!
//! A written date wins over a relative one wherever each stands ("what did
//! she finish last Friday, on 23 January 2022" names the 23rd).
//!
//! A day matches records within [`NEAR_DAYS`] days of it: a conversation on a
//! date tells of what happened a few days before, and the date a question names
//! is the one its answer was told or done on.

use time::{Date, Month, OffsetDateTime, Weekday};

/// How many days either side of a named day still match it. Measured on the
/// LoCoMo dev questions that name a day: their evidence turns sit 0 to 4 days
/// from it; 2, 4 and 7 rank within 0.003 Recall@10 of each other (README,
/// Evaluation).
pub const NEAR_DAYS: i64 = 4;

/// The date a query names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateHint {
    /// One day of one year.
    Day(Date),
    /// A day of a month, in any year.
    DayOfAnyYear(Month, u8),
    /// A whole month of one year.
    Month(i32, Month),
    /// A month, in any year.
    MonthOfAnyYear(Month),
    /// From the first day to the last, both included.
    Days(Date, Date),
}

impl DateHint {
    /// The first date named in `query`, if any, with today (UTC) for the
    /// relative ones.
    pub fn of(query: &str) -> Option<DateHint> {
        DateHint::of_at(query, OffsetDateTime::now_utc().date())
    }

    /// The first date named in `query`, if any, taking `today` as today.
    pub fn of_at(query: &str, today: Date) -> Option<DateHint> {
        let words: Vec<&str> = query
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
            .filter(|w| !w.is_empty())
            .collect();
        (0..words.len())
            .find_map(|i| hint_at(&words, i))
            .or_else(|| (0..words.len()).find_map(|i| relative_at(&words, i, today)))
    }

    /// Whether a record whose own time is `unix_secs` falls on this date.
    pub fn covers(&self, unix_secs: i64) -> bool {
        let Ok(time) = OffsetDateTime::from_unix_timestamp(unix_secs) else {
            return false;
        };
        let date = time.date();
        match *self {
            DateHint::Day(day) => near(date, day),
            DateHint::DayOfAnyYear(month, day) => [date.year() - 1, date.year(), date.year() + 1]
                .into_iter()
                .filter_map(|year| Date::from_calendar_date(year, month, day).ok())
                .any(|named| near(date, named)),
            DateHint::Month(year, month) => date.year() == year && date.month() == month,
            DateHint::MonthOfAnyYear(month) => date.month() == month,
            DateHint::Days(first, last) => first <= date && date <= last,
        }
    }
}

fn near(a: Date, b: Date) -> bool {
    (a - b).whole_days().abs() <= NEAR_DAYS
}

/// The date that starts at `words[i]`, if one does.
fn hint_at(words: &[&str], i: usize) -> Option<DateHint> {
    let word = words[i];
    if let Some(date) = iso_date(word) {
        return Some(DateHint::Day(date));
    }
    let next = |k: usize| words.get(i + k).copied();
    if let Some(month) = month_of(word) {
        // "October 13, 2023", "Oct 13th", "October 2023".
        if let Some(day) = next(1).and_then(day_of) {
            return Some(match next(2).and_then(year_of) {
                Some(year) => day_in(year, month, day)?,
                None => DateHint::DayOfAnyYear(month, day),
            });
        }
        if let Some(year) = next(1).and_then(year_of) {
            return Some(DateHint::Month(year, month));
        }
        // "in October": capitalised, after a word that introduces a time.
        let introduced = i > 0
            && matches!(
                words[i - 1].to_lowercase().as_str(),
                "in" | "during" | "of" | "since" | "until"
            );
        let capitalised = word.chars().next().is_some_and(char::is_uppercase);
        let full_name = word.len() > 3 || word.eq_ignore_ascii_case("may");
        if introduced && capitalised && full_name {
            return Some(DateHint::MonthOfAnyYear(month));
        }
        return None;
    }
    // "in 2023": a year, introduced by a word that says it is one.
    if let Some(year) = year_of(word) {
        let introduced = i > 0
            && matches!(
                words[i - 1].to_lowercase().as_str(),
                "in" | "during" | "of" | "throughout"
            );
        return introduced.then(|| whole_year(year)).flatten();
    }
    // "13 October, 2023", "13 Oct".
    let day = day_of(word)?;
    let month = next(1).and_then(month_of)?;
    match next(2).and_then(year_of) {
        Some(year) => day_in(year, month, day),
        None => Some(DateHint::DayOfAnyYear(month, day)),
    }
}

/// "yesterday", "3 days ago", "last week"… starting at `words[i]`, from `today`.
fn relative_at(words: &[&str], i: usize, today: Date) -> Option<DateHint> {
    let word = words[i].to_lowercase();
    let next = words.get(i + 1).map(|w| w.to_lowercase());
    let day = |days_back: i64| today.checked_sub(time::Duration::days(days_back));
    match (word.as_str(), next.as_deref()) {
        // Said of one's own recent days, these are exact (a named calendar
        // day is not: see NEAR_DAYS).
        ("today", _) => Some(DateHint::Days(today, today)),
        ("yesterday", _) => day(1).map(|d| DateHint::Days(d, d)),
        ("this" | "last", Some("week")) => {
            let monday = day(i64::from(today.weekday().number_days_from_monday()))?;
            let first = if word == "last" {
                monday.checked_sub(time::Duration::days(7))?
            } else {
                monday
            };
            Some(DateHint::Days(
                first,
                first.checked_add(time::Duration::days(6))?,
            ))
        }
        ("this", Some("year")) => whole_year(today.year()),
        ("last", Some("year")) => whole_year(today.year() - 1),
        ("on" | "last", Some(name)) if weekday_of(name).is_some() => {
            let weekday = weekday_of(name)?;
            let back = (today.weekday().number_days_from_monday() + 7
                - weekday.number_days_from_monday())
                % 7;
            let d = day(if back == 0 { 7 } else { i64::from(back) })?;
            Some(DateHint::Days(d, d))
        }
        ("this", Some(name)) if weekday_of(name).is_some() => {
            let monday = day(i64::from(today.weekday().number_days_from_monday()))?;
            let d = monday.checked_add(time::Duration::days(i64::from(
                weekday_of(name)?.number_days_from_monday(),
            )))?;
            Some(DateHint::Days(d, d))
        }
        ("this", Some("month")) => Some(DateHint::Month(today.year(), today.month())),
        ("last", Some("month")) => {
            let last = today.replace_day(1).ok()?.previous_day()?;
            Some(DateHint::Month(last.year(), last.month()))
        }
        (_, Some("days" | "day"))
            if words
                .get(i + 2)
                .is_some_and(|w| w.eq_ignore_ascii_case("ago")) =>
        {
            let n: i64 = word.parse().ok()?;
            let d = (1..=366).contains(&n).then(|| day(n)).flatten()?;
            Some(DateHint::Days(d.previous_day()?, d.next_day()?.min(today)))
        }
        _ => None,
    }
}

/// January 1st to December 31st of `year`.
fn whole_year(year: i32) -> Option<DateHint> {
    Some(DateHint::Days(
        Date::from_calendar_date(year, Month::January, 1).ok()?,
        Date::from_calendar_date(year, Month::December, 31).ok()?,
    ))
}

/// A weekday's English name (`monday`, any case; not abbreviated, so `sat`
/// and `sun` stay words).
fn weekday_of(word: &str) -> Option<Weekday> {
    const NAMES: [(&str, Weekday); 7] = [
        ("monday", Weekday::Monday),
        ("tuesday", Weekday::Tuesday),
        ("wednesday", Weekday::Wednesday),
        ("thursday", Weekday::Thursday),
        ("friday", Weekday::Friday),
        ("saturday", Weekday::Saturday),
        ("sunday", Weekday::Sunday),
    ];
    let lower = word.to_lowercase();
    NAMES
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|&(_, weekday)| weekday)
}

fn day_in(year: i32, month: Month, day: u8) -> Option<DateHint> {
    Date::from_calendar_date(year, month, day)
        .ok()
        .map(DateHint::Day)
}

/// `2023-10-13`.
fn iso_date(word: &str) -> Option<Date> {
    let mut parts = word.split('-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    let month = Month::try_from(month.parse::<u8>().ok()?).ok()?;
    Date::from_calendar_date(year.parse().ok()?, month, day.parse().ok()?).ok()
}

/// `13`, `13th`, `1st`: a day of a month.
fn day_of(word: &str) -> Option<u8> {
    let digits = word.len() - word.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (number, suffix) = word.split_at(digits);
    if !(1..=2).contains(&number.len()) || !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    let day: u8 = number.parse().ok()?;
    (1..=31).contains(&day).then_some(day)
}

/// A four-digit year from 1900 to 2199.
fn year_of(word: &str) -> Option<i32> {
    let year: i32 = word.parse().ok()?;
    (word.len() == 4 && (1900..2200).contains(&year)).then_some(year)
}

/// A month's full English name or three-letter abbreviation (`Sept` too).
fn month_of(word: &str) -> Option<Month> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = word.to_lowercase();
    let at = NAMES.iter().position(|name| {
        *name == lower
            || (lower.len() == 3 && name.starts_with(&lower))
            || lower == "sept" && *name == "september"
    })?;
    Month::try_from(at as u8 + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn secs(d: Date) -> i64 {
        d.midnight().assume_utc().unix_timestamp() + 13 * 3600
    }

    #[test]
    fn days_are_read_in_every_written_form() {
        let day = Some(DateHint::Day(date!(2023 - 10 - 13)));
        for query in [
            "What painting did Melanie show to Caroline on October 13, 2023?",
            "what broke on 2023-10-13",
            "notes from Oct 13th 2023",
            "What did Gina find on 13 October, 2023?",
            "the deploy of 13 oct 2023.",
        ] {
            assert_eq!(DateHint::of(query), day, "{query}");
        }
        assert_eq!(
            DateHint::of("what did we ship on Nov 3?"),
            Some(DateHint::DayOfAnyYear(Month::November, 3))
        );
    }

    #[test]
    fn months_are_read_with_a_year_or_after_a_time_word() {
        assert_eq!(
            DateHint::of("What setback did Melanie face in October 2023?"),
            Some(DateHint::Month(2023, Month::October))
        );
        assert_eq!(
            DateHint::of("When did Melanie go camping in June?"),
            Some(DateHint::MonthOfAnyYear(Month::June))
        );
    }

    #[test]
    fn words_that_only_look_like_months_name_nothing() {
        for query in [
            "may I see the config",
            "how did the march of the migrations go",
            "May we drop the index?",
            "in may the tests failed",
            "fix E0502 in oct.rs",
            "users kept getting signed out",
            "port 8080 on 2023-13-45",
            "February 30, 2023",
        ] {
            assert_eq!(DateHint::of(query), None, "{query}");
        }
    }

    #[test]
    fn relative_dates_count_from_today() {
        // A Wednesday.
        let today = date!(2026 - 11 - 25);
        let of = |q: &str| DateHint::of_at(q, today);
        assert_eq!(
            of("what did we fix yesterday?"),
            Some(DateHint::Days(date!(2026 - 11 - 24), date!(2026 - 11 - 24)))
        );
        assert_eq!(
            of("the test that failed today"),
            Some(DateHint::Days(today, today))
        );
        assert_eq!(
            of("the deploy 3 days ago"),
            Some(DateHint::Days(date!(2026 - 11 - 21), date!(2026 - 11 - 23)))
        );
        assert_eq!(
            of("what did we decide last week"),
            Some(DateHint::Days(date!(2026 - 11 - 16), date!(2026 - 11 - 22)))
        );
        assert_eq!(
            of("the flaky tests this week"),
            Some(DateHint::Days(date!(2026 - 11 - 23), date!(2026 - 11 - 29)))
        );
        assert_eq!(
            of("last month"),
            Some(DateHint::Month(2026, Month::October))
        );
        assert_eq!(
            DateHint::of_at("last month", date!(2026 - 01 - 10)),
            Some(DateHint::Month(2025, Month::December))
        );
        // An absolute date wins where it comes first; words alone name nothing.
        assert_eq!(
            of("on 2026-03-09, not yesterday"),
            Some(DateHint::Day(date!(2026 - 03 - 09)))
        );
        assert_eq!(
            of("last Friday on 23 January, 2022"),
            Some(DateHint::Day(date!(2022 - 01 - 23)))
        );
        assert_eq!(of("the last of the weekly jobs"), None);
        assert_eq!(of("two days ago"), None);
        let week = DateHint::Days(date!(2026 - 11 - 16), date!(2026 - 11 - 22));
        assert!(week.covers(secs(date!(2026 - 11 - 16))));
        assert!(week.covers(secs(date!(2026 - 11 - 22))));
        assert!(!week.covers(secs(date!(2026 - 11 - 23))));
    }

    #[test]
    fn years_and_weekdays_are_read() {
        // A Wednesday.
        let today = date!(2026 - 11 - 25);
        let of = |q: &str| DateHint::of_at(q, today);
        let year = |y: i32| {
            Some(DateHint::Days(
                Date::from_calendar_date(y, Month::January, 1).unwrap(),
                Date::from_calendar_date(y, Month::December, 31).unwrap(),
            ))
        };
        assert_eq!(
            of("How many times has Melanie gone to the beach in 2023?"),
            year(2023)
        );
        assert_eq!(of("what we shipped during 2025"), year(2025));
        assert_eq!(of("the outage last year"), year(2025));
        assert_eq!(of("flaky tests this year"), year(2026));
        let day = |d: Date| Some(DateHint::Days(d, d));
        assert_eq!(of("what did we fix on Monday"), day(date!(2026 - 11 - 23)));
        assert_eq!(of("the deploy last friday"), day(date!(2026 - 11 - 20)));
        // Today is a Wednesday: "on Wednesday" is a week ago, "this" is today.
        assert_eq!(of("on Wednesday"), day(date!(2026 - 11 - 18)));
        assert_eq!(of("this Wednesday"), day(today));
        assert_eq!(of("this Sunday"), day(date!(2026 - 11 - 29)));
        for query in [
            "listen on port 2023",
            "error 2023 in the build",
            "Friday the cat",
            "Black Friday load",
            "the sat solver",
        ] {
            assert_eq!(of(query), None, "{query}");
        }
    }

    #[test]
    fn a_day_covers_records_a_few_days_either_side() {
        let hint = DateHint::Day(date!(2023 - 10 - 13));
        assert!(hint.covers(secs(date!(2023 - 10 - 13))));
        assert!(hint.covers(secs(date!(2023 - 10 - 9))));
        assert!(hint.covers(secs(date!(2023 - 10 - 17))));
        assert!(!hint.covers(secs(date!(2023 - 10 - 18))));
        assert!(!hint.covers(secs(date!(2022 - 10 - 13))));
        let any_year = DateHint::DayOfAnyYear(Month::January, 1);
        assert!(any_year.covers(secs(date!(2024 - 12 - 30))));
        assert!(any_year.covers(secs(date!(2019 - 1 - 2))));
        assert!(!any_year.covers(secs(date!(2019 - 6 - 1))));
    }

    #[test]
    fn a_month_covers_its_own_days_only() {
        let month = DateHint::Month(2023, Month::June);
        assert!(month.covers(secs(date!(2023 - 6 - 1))));
        assert!(month.covers(secs(date!(2023 - 6 - 30))));
        assert!(!month.covers(secs(date!(2023 - 7 - 1))));
        assert!(!month.covers(secs(date!(2024 - 6 - 10))));
        assert!(DateHint::MonthOfAnyYear(Month::June).covers(secs(date!(2024 - 6 - 10))));
    }
}
