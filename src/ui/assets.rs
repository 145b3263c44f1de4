//! The page's files, embedded in the binary: the viewer serves nothing from
//! disk and fetches nothing from elsewhere, so it works offline and its page
//! is the one this build was tested with.

use std::sync::OnceLock;

const INDEX: &str = include_str!("page/index.html");
const APP: &str = include_str!("page/app.js");
const VIEWS: &str = include_str!("page/views.js");
const LIB: &str = include_str!("page/lib.js");
const STYLE: &str = include_str!("page/style.css");
const PREACT: &str = include_str!("page/vendor/preact.mjs");
const HOOKS: &str = include_str!("page/vendor/hooks.mjs");
const HTM: &str = include_str!("page/vendor/htm.mjs");

const JS: &str = "text/javascript; charset=utf-8";

/// `hooks.mjs` as published imports the bare name `"preact"`; a page without
/// an import map needs the file's path (see `page/vendor/README.md`).
fn hooks() -> &'static str {
    static HOOKS_WITH_PATH: OnceLock<String> = OnceLock::new();
    HOOKS_WITH_PATH.get_or_init(|| HOOKS.replace("from\"preact\"", "from\"./preact.mjs\""))
}

/// The file `name` (a path under `assets/`, or `index.html`) and its content type.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "index.html" => (INDEX, "text/html; charset=utf-8"),
        "app.js" => (APP, JS),
        "views.js" => (VIEWS, JS),
        "lib.js" => (LIB, JS),
        "style.css" => (STYLE, "text/css; charset=utf-8"),
        "vendor/preact.mjs" => (PREACT, JS),
        "vendor/hooks.mjs" => (hooks(), JS),
        "vendor/htm.mjs" => (HTM, JS),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_page_imports_is_served() {
        assert!(!hooks().contains("from\"preact\""));
        assert!(hooks().contains("from\"./preact.mjs\""));
        for (file, text) in [("app.js", APP), ("views.js", VIEWS), ("lib.js", LIB)] {
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let path = line
                    .split(['"', '\''])
                    .nth(1)
                    .unwrap_or_else(|| panic!("{file}: {line}"));
                let name = path.trim_start_matches("./");
                assert!(
                    get(name).is_some(),
                    "{file} imports {path}, which is not served"
                );
            }
        }
        assert!(INDEX.contains("assets/app.js"));
        assert!(get("../Cargo.toml").is_none());
    }
}
