//! The `miniblock` command line tool.

fn main() {}
