//! A throwaway PostgreSQL cluster for the fault tests: `initdb` in a temporary directory, the
//! server on a free port of 127.0.0.1, stopped (`pg_ctl stop -m immediate`, a crash) and started
//! again at will, and always stopped and removed on drop.
//!
//! The server refuses to run as root: as root, every `initdb`/`pg_ctl` runs as the `postgres`
//! user through `runuser`, in a directory owned by it; as any other user, directly. When neither
//! can work (no PostgreSQL binaries, no `postgres` user), [`Cluster::require`] skips the test
//! with a printed reason, or fails it under CI.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a start or a stop may take before the test fails.
const PG_CTL_TIMEOUT_SECS: u32 = 60;

/// A throwaway cluster (see the [module documentation](self)).
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// Run the binaries as the `postgres` user (we are root).
    as_postgres: bool,
}

impl Cluster {
    /// A running cluster; `None` (after saying why) when none can be made outside CI. Under CI
    /// (`CI` set) a cluster that cannot be made fails the test.
    pub fn require() -> Option<Self> {
        match Self::start() {
            Ok(cluster) => Some(cluster),
            Err(reason) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot start a throwaway PostgreSQL cluster, and CI makes this test mandatory: {reason}"
                );
                println!("skipping: cannot start a throwaway PostgreSQL cluster: {reason}");
                None
            }
        }
    }

    /// `initdb` in a fresh temporary directory, then the server on a free port.
    pub fn start() -> Result<Self, String> {
        let bin = find_bin()?;
        let as_postgres = whoami()? == "root";
        if as_postgres {
            let ok = Command::new("id").arg("postgres").output().is_ok_and(|o| o.status.success());
            if !ok {
                return Err("running as root and there is no `postgres` user to run the server".to_owned());
            }
        }
        let dir = std::env::temp_dir().join(format!("orchestrator-pg-{:016x}", fastrand::u64(..)));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cluster = Self { bin, dir, port: free_port()?, as_postgres };
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(&cluster.dir))?;
        }
        cluster.pg("initdb", |c| {
            c.arg("-D").arg(cluster.data()).args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ])
        })?;
        cluster.start_server()?;
        Ok(cluster)
    }

    /// The URL of the cluster's `postgres` database (user `postgres`, trust).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port the server listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server the way a crash does (`pg_ctl stop -m immediate`: no checkpoint; the
    /// next start recovers from the WAL).
    pub fn crash(&self) {
        self.pg("pg_ctl", |c| {
            c.arg("stop").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "-t"]).arg(timeout())
        })
        .expect("pg_ctl stop -m immediate");
    }

    /// Starts the server again on the same port and waits until it accepts connections.
    pub fn restart(&self) {
        self.start_server().expect("pg_ctl start");
    }

    /// The server's log so far (for a failure message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn start_server(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=100",
            self.port,
            self.dir.display()
        );
        self.pg("pg_ctl", |c| {
            c.arg("start")
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.dir.join("server.log"))
                .args(["-w", "-t"])
                .arg(timeout())
                .arg("-o")
                .arg(&options)
        })
        .map_err(|e| format!("{e}\nserver log:\n{}", self.log()))?;
        // `-w` waits for the server to accept connections; check on TCP too, bounded.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("the server does not listen on {}", self.port));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Runs the PostgreSQL binary `name` (as `postgres` when we are root), arguments set by
    /// `args`.
    fn pg(&self, name: &str, args: impl FnOnce(&mut Command) -> &mut Command) -> Result<Output, String> {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        // The server and its tools need a working directory they may read.
        command.current_dir(&self.dir);
        args(&mut command);
        run(&mut command)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            let stopped = self.pg("pg_ctl", |c| {
                c.arg("stop").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "-t"]).arg(timeout())
            });
            if let Err(e) = stopped {
                eprintln!("could not stop the throwaway cluster: {e}");
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

fn timeout() -> String {
    PG_CTL_TIMEOUT_SECS.to_string()
}

/// Runs `command`; its output, or an error with what it printed.
fn run(command: &mut Command) -> Result<Output, String> {
    let output = command.output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The directory of `initdb` and `pg_ctl`: `/usr/lib/postgresql/<newest>/bin`, or the
/// directory of `pg_ctl` on the `PATH`.
fn find_bin() -> Result<PathBuf, String> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").exists() && bin.join("pg_ctl").exists()).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
        .ok_or_else(|| "no initdb/pg_ctl in /usr/lib/postgresql/*/bin or on the PATH".to_owned())
}

fn whoami() -> Result<String, String> {
    let output = run(Command::new("id").arg("-un"))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// A port nobody listens on now: one the kernel picked for a listener bound to port 0.
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("no local address: {e}"))
}
