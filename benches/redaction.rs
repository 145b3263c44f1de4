//! placeholder, written below
fn main() {}
