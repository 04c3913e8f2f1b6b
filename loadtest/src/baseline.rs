//! The bare broadcast server: tokio-tungstenite, no storage, no auth. Every text frame a client
//! sends goes to every client; each client's frames wait in a bounded queue and are written in
//! batches, one flush per batch, with 4 KiB read and 8 KiB write buffers — agora's own socket
//! settings, so the difference between the two is what agora does beyond broadcasting.

use std::sync::Arc;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Runs the bare broadcast server until the process is stopped.
pub async fn run(listen: &str) -> anyhow::Result<Value> {
    // The same accept queue as agora's listeners (4,096), so a connect storm meets the same kernel.
    let addr: std::net::SocketAddr = listen.parse()?;
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(4096)?;
    eprintln!("baseline: broadcasting on ws://{}", listener.local_addr()?);
    // Every client's queue; a full queue drops that client, as agora does.
    let clients: Arc<std::sync::RwLock<Vec<tokio::sync::mpsc::Sender<Arc<str>>>>> = Arc::default();
    loop {
        let (stream, _) = listener.accept().await?;
        let clients = clients.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let config = WebSocketConfig::default().read_buffer_size(4 * 1024).write_buffer_size(8 * 1024);
            let Ok(ws) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
                return;
            };
            let (mut sink, mut stream) = ws.split();
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Arc<str>>(512);
            if let Ok(mut list) = clients.write() {
                list.push(tx);
            }
            let writer = tokio::spawn(async move {
                while let Some(frame) = rx.recv().await {
                    let mut batch = vec![frame];
                    while batch.len() < 64 {
                        match rx.try_recv() {
                            Ok(f) => batch.push(f),
                            Err(_) => break,
                        }
                    }
                    for f in batch {
                        if sink.feed(Message::text(f.to_string())).await.is_err() {
                            return;
                        }
                    }
                    if sink.flush().await.is_err() {
                        return;
                    }
                }
            });
            while let Some(Ok(msg)) = stream.next().await {
                if let Message::Text(t) = msg {
                    let frame: Arc<str> = Arc::from(t.as_str());
                    if let Ok(mut list) = clients.write() {
                        list.retain(|c| c.try_send(frame.clone()).is_ok());
                    }
                }
            }
            writer.abort();
        });
    }
}
