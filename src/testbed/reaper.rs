//! Child processes that cannot outlive the process that started them (the demo, a test binary). Linux delivers PR_SET_PDEATHSIG when the
//! *thread* that forked exits, so every child is forked from one thread that lives as long as the
//! process; a crashed or killed test binary therefore takes its servers with it.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

type Request = (Command, Sender<std::io::Result<Child>>);

fn spawner() -> &'static Mutex<Sender<Request>> {
    static S: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();
    S.get_or_init(|| {
        let (tx, rx) = channel::<Request>();
        std::thread::Builder::new()
            .name("test-child-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    // SAFETY: prctl is async-signal-safe and touches no Rust state.
                    unsafe {
                        cmd.pre_exec(|| {
                            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                            Ok(())
                        });
                    }
                    let _ = reply.send(cmd.spawn());
                }
                // The sender lives in a static, so this loop (and thread) never ends.
            })
            .ok(); // without the thread, spawn() reports that it is gone
        Mutex::new(tx)
    })
}

static PIDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
static DIRS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

extern "C" fn clean_up_at_exit() {
    if let Ok(pids) = PIDS.lock() {
        for pid in pids.iter() {
            // SAFETY: plain syscall; a pid that already exited is harmless here.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
    if let Ok(dirs) = DIRS.lock() {
        for d in dirs.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn register_exit_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: registering a plain extern "C" fn; the test harness exits via libc exit().
        unsafe { libc::atexit(clean_up_at_exit) };
    });
}

/// Removes `dir` when the test process exits (statics are never dropped).
pub fn remove_at_exit(dir: std::path::PathBuf) {
    register_exit_hook();
    if let Ok(mut dirs) = DIRS.lock() {
        dirs.push(dir);
    }
}

/// Spawns `cmd` so that it is killed when this process exits for any reason.
pub fn spawn(cmd: Command) -> Result<Child, String> {
    register_exit_hook();
    let (tx, rx) = channel();
    let program = format!("{:?}", cmd.get_program());
    let gone = || "the child-spawner thread is gone".to_string();
    spawner()
        .lock()
        .map_err(|_| gone())?
        .send((cmd, tx))
        .map_err(|_| gone())?;
    let child = rx
        .recv()
        .map_err(|_| gone())?
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if let Ok(mut pids) = PIDS.lock() {
        pids.push(child.id() as i32);
    }
    Ok(child)
}
