//! Benchmarks live in `benches/*.rs` of this package.
