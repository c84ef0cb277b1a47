//! `cargo bench -p hcpx-egress --bench proxy`: what the proxy's CONNECT tunnel adds
//! to one HTTP request on a fresh TCP connection to a loopback server, against the
//! same request made directly; the two interleaved, 1,000 rounds.
//!
//! Prints p50 and p99 of each and the difference of the p50s; never asserts on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints, and stops loudly on failure"
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hcpx_egress::{Allow, Call, Policy};
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

const ROUNDS: usize = 1000;

async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok\n"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// One GET on `io`, the whole body read.
async fn get<T>(io: T, host: &str)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get("/")
        .header("host", host)
        .header("connection", "close")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.into_body().collect().await.unwrap();
}

async fn direct(server: SocketAddr, host: &str) {
    let stream = TcpStream::connect(server).await.unwrap();
    stream.set_nodelay(true).unwrap();
    get(stream, host).await;
}

async fn proxied(proxy: SocketAddr, host: &str) {
    let stream = TcpStream::connect(proxy).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection.with_upgrades());
    let request = Request::connect(host)
        .header("host", host)
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let tunnel = TokioIo::new(hyper::upgrade::on(response).await.unwrap());
    get(tunnel, host).await;
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = server().await;
        let host = server.to_string();
        let policy = Policy {
            allow: vec![Allow::parse(&host).unwrap()],
            headers: Vec::new(),
        };
        // No header bindings: nothing ends TLS, as hcpx starts such a call.
        let call = Call::new(policy, None);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = listener.local_addr().unwrap();
        let _running = call.serve(listener, Vec::new()).unwrap();

        for _ in 0..50 {
            direct(server, &host).await;
            proxied(proxy, &host).await;
        }
        let (mut plain, mut through) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
        for _ in 0..ROUNDS {
            let started = Instant::now();
            direct(server, &host).await;
            plain.push(started.elapsed());
            let started = Instant::now();
            proxied(proxy, &host).await;
            through.push(started.elapsed());
        }
        let (p50, p99) = (percentile(&mut plain, 0.5), percentile(&mut plain, 0.99));
        let (t50, t99) = (percentile(&mut through, 0.5), percentile(&mut through, 0.99));
        println!("HTTP GET on a fresh connection to loopback, {ROUNDS} rounds interleaved");
        println!(
            "  direct:            p50 {:.3} ms  p99 {:.3} ms",
            ms(p50),
            ms(p99)
        );
        println!(
            "  through CONNECT:   p50 {:.3} ms  p99 {:.3} ms",
            ms(t50),
            ms(t99)
        );
        println!("  the proxy adds:    {:.3} ms at p50", ms(t50) - ms(p50));
        assert!(call.refusals().is_empty());
    });
}
