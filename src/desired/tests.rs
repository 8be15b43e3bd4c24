//! Tests of the desired-state loader.
