//! HTTP/1.1 on the wire: reading requests, writing responses.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub(super) struct Request {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    pub(super) close: bool,
}

impl Request {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

pub(super) async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    // Skip blank lines between requests.
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let version = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    let mut head_size = line.len();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        head_size += line.len();
        if head_size > MAX_HEAD {
            return Err(std::io::Error::other("request head too large"));
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let mut request = Request {
        method,
        path,
        close: version == "HTTP/1.0",
        headers,
        body: Vec::new(),
    };
    if request
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    {
        request.close = true;
    }
    if request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        request.body = read_chunked(reader).await?;
    } else {
        let length: usize = request
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if length > MAX_BODY {
            return Err(std::io::Error::other("request body too large"));
        }
        request.body = vec![0; length];
        reader.read_exact(&mut request.body).await?;
    }
    Ok(Some(request))
}

async fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        let size_text = line.trim().split(';').next().unwrap_or_default();
        let size =
            usize::from_str_radix(size_text, 16).map_err(|_| std::io::Error::other("bad chunk size"))?;
        if body.len() + size > MAX_BODY {
            return Err(std::io::Error::other("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).await?;
        line.clear();
        reader.read_line(&mut line).await?; // CRLF after the chunk
        if size == 0 {
            return Ok(body);
        }
    }
}

pub(super) async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    extra_headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Internal Server Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await
}

pub(super) fn error_body(message: &str) -> Vec<u8> {
    json!({"error": {"message": message, "type": "test_server"}})
        .to_string()
        .into_bytes()
}
