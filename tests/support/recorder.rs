//! A real HTTP server on 127.0.0.1 for the tests that must see what chainsmith sends: it records
//! every request and answers what the test says, redirects included.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A server that records every request (its head and body, as text) and answers with what
/// `reply(path)` returns: a whole raw HTTP response (text, or bytes for a compressed body).
pub struct Recorder {
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    pub fn start<R: AsRef<[u8]>>(reply: impl Fn(&str) -> R + Send + Sync + 'static) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let recorded = requests.clone();
        let reply = Arc::new(reply);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (recorded, reply) = (recorded.clone(), reply.clone());
                std::thread::spawn(move || serve(stream, &recorded, &*reply));
            }
        });
        Recorder { port, requests }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn received(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve<R: AsRef<[u8]>>(stream: TcpStream, recorded: &Mutex<Vec<String>>, reply: &(dyn Fn(&str) -> R + Send + Sync)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
            let end = line.trim_end().is_empty();
            head.push_str(&line);
            if end && head.trim() != "" {
                break;
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        recorded.lock().unwrap().push(format!("{head}{}", String::from_utf8_lossy(&body)));
        let mut out = stream.try_clone().unwrap();
        if out.write_all(reply(&path).as_ref()).and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

pub fn ok_json(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
}

pub fn redirect(to: &str) -> String {
    format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n")
}
