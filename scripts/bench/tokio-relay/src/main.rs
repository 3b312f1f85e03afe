//! A minimal tokio relay: each accepted connection gets a connection to the upstream, and
//! `copy_bidirectional` moves bytes both ways, on one current-thread runtime (as the C relay runs
//! on one epoll loop). The floor of a proxy built on tokio, for scripts/bench-relay.
//! Usage: tokio-relay LISTEN_PORT UPSTREAM_PORT (both on 127.0.0.1).

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};

fn port(arg: Option<String>) -> u16 {
    match arg.as_deref().map(str::parse) {
        Some(Ok(p)) => p,
        _ => {
            eprintln!("usage: tokio-relay LISTEN_PORT UPSTREAM_PORT");
            std::process::exit(2);
        }
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (listen, upstream) = (port(args.next()), port(args.next()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", listen)).await?;
        loop {
            let (mut client, _) = listener.accept().await?;
            tokio::spawn(async move {
                let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = up.set_nodelay(true);
                let _ = copy_bidirectional(&mut client, &mut up).await;
            });
        }
    })
}
