//! Checks on finished work: CI gates on a run's figures (`--fail-if`) and regression checks of
//! a run or a sweep against a stored baseline (`speclens check`).

pub mod gates;
pub mod regress;
