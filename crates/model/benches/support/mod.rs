//! Helpers shared by this crate's benches.

/// The number in environment variable `name`, else `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A one-worker tokio runtime (one for the server, one for the client, so that each
/// side runs single-threaded like the Python client it is compared with).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
