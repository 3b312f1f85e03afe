//! Gateway operations as primitives: each takes what `route` planned and a [`super::Cursor`],
//! does its work through the cursor only, and gives back a value (rows, a rewritten statement)
//! for the session to run or answer. One file each.

pub mod subquery_bind;

#[cfg(test)]
mod fake_cursor;
#[cfg(test)]
mod subquery_bind_tests;
