//! Crash tests' children: this test binary run again as one ignored test (with its environment),
//! its output, and kill moments a seed reproduces.

use std::io::Read;
use std::process::{Child, Command, Stdio};

/// Runs this test binary's ignored test `test` alone in a child process, with `env` set, its
/// output piped (read it with [`output`]).
pub fn spawn_test(test: &str, env: &[(&str, &str)]) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--ignored", "--nocapture", "--test-threads", "1"])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child")
}

/// What a (killed or finished) child wrote: its stdout, then its stderr.
pub fn output(child: &mut Child) -> String {
    let mut out = String::new();
    if let Some(stdout) = child.stdout.as_mut() {
        let _ = stdout.read_to_string(&mut out);
    }
    if let Some(stderr) = child.stderr.as_mut() {
        let _ = stderr.read_to_string(&mut out);
    }
    out
}

/// The seed in `CRASH_SEED`, else one from the clock; printed, so that a failure can be
/// replayed.
pub fn seed() -> u64 {
    let seed = std::env::var("CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1
    });
    println!("CRASH_SEED={seed}");
    seed
}

/// xorshift64*: kill moments that a seed reproduces.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}
