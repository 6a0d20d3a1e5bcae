//! The web console at `/shoal/console` (`shoal serve --console`): three files built into
//! the binary (`console/index.html`, `console.css`, `console.js`), no build step, nothing
//! fetched from elsewhere. The page calls the server's own DynamoDB API (`POST /` with
//! `X-Amz-Target`, as any client) and the admin API, so everything it shows is what a
//! client would see. It is served under the admin API's rule: loopback clients only,
//! unless remote admin clients are allowed.
//!
//! Each file answers with its content type, an `ETag` (CRC32 and length of its bytes) and
//! `Cache-Control: no-cache`: a browser asks again on every load and gets `304 Not
//! Modified` while the binary is the same.

use crate::response::response;
use bytes::Bytes;
use http::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use http::request::Parts;
use http::{HeaderValue, Method, Response, StatusCode};
use http_body_util::Full;

/// Where the console lives; the files are under it.
pub const CONSOLE_PATH: &str = "/shoal/console";

/// The page's own scripts and styles only; the bench report it shows is inline-styled
/// HTML in a sandboxed frame, which inherits this policy.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'";

struct Asset {
    content_type: &'static str,
    body: &'static str,
}

const INDEX: Asset = Asset {
    content_type: "text/html; charset=utf-8",
    body: include_str!("console/index.html"),
};
const SCRIPT: Asset = Asset {
    content_type: "text/javascript; charset=utf-8",
    body: include_str!("console/console.js"),
};
const STYLE: Asset = Asset {
    content_type: "text/css; charset=utf-8",
    body: include_str!("console/console.css"),
};

/// The file at `path` (under [`CONSOLE_PATH`]), if there is one.
fn asset(path: &str) -> Option<&'static Asset> {
    match path.strip_prefix(CONSOLE_PATH)? {
        "" | "/" | "/index.html" => Some(&INDEX),
        "/console.js" => Some(&SCRIPT),
        "/console.css" => Some(&STYLE),
        _ => None,
    }
}

fn etag(asset: &Asset) -> String {
    format!(
        "\"{:08x}-{:x}\"",
        crc32fast::hash(asset.body.as_bytes()),
        asset.body.len()
    )
}

/// Whether `path` is the console's (the admin API routes it here).
pub fn is_console_path(path: &str) -> bool {
    path == CONSOLE_PATH || path.starts_with("/shoal/console/")
}

/// Answers a `GET` (or `HEAD`) of a console file; `None` when there is no such file or
/// another method is used, which the admin API answers as it answers any unknown call.
pub fn answer(parts: &Parts, request_id: &str) -> Option<Response<Full<Bytes>>> {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return None;
    }
    let asset = asset(parts.uri.path())?;
    let tag = etag(asset);
    let unchanged = parts
        .headers
        .get(IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|sent| sent.split(',').any(|one| one.trim() == tag));
    let (status, body) = if unchanged {
        (StatusCode::NOT_MODIFIED, "")
    } else {
        (StatusCode::OK, asset.body)
    };
    let mut answer = response(status, asset.content_type, body, request_id);
    let headers = answer.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(ETAG, value);
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        http::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        http::header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    headers.insert(
        http::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;
    use http_body_util::BodyExt;

    fn get(path: &str, if_none_match: Option<&str>) -> Option<Response<Full<Bytes>>> {
        let mut request = Request::get(path);
        if let Some(tag) = if_none_match {
            request = request.header(IF_NONE_MATCH, tag);
        }
        let (parts, ()) = request.body(()).unwrap().into_parts();
        answer(&parts, "id")
    }

    async fn body_of(response: Response<Full<Bytes>>) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn each_file_is_served_with_its_content_type_and_a_validator() {
        for (path, content_type, marker) in [
            ("/shoal/console", "text/html", "<!doctype html>"),
            ("/shoal/console/", "text/html", "/shoal/console/console.js"),
            (
                "/shoal/console/console.js",
                "text/javascript",
                "X-Amz-Target",
            ),
            ("/shoal/console/console.css", "text/css", "@media"),
        ] {
            let answer = get(path, None).unwrap();
            assert_eq!(answer.status(), StatusCode::OK, "{path}");
            let headers = answer.headers().clone();
            assert!(
                headers[http::header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with(content_type),
                "{path}: {headers:?}"
            );
            assert_eq!(headers[CACHE_CONTROL], "no-cache", "{path}");
            assert!(headers.contains_key(http::header::CONTENT_SECURITY_POLICY));
            let tag = headers[ETAG].to_str().unwrap().to_owned();
            let body = body_of(answer).await;
            assert!(body.contains(marker), "{path} lacks {marker}");
            // The same tag again: nothing to send.
            let again = get(path, Some(&format!("\"other\", {tag}"))).unwrap();
            assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
            assert_eq!(body_of(again).await, "");
            let stale = get(path, Some("\"00000000-0\"")).unwrap();
            assert_eq!(stale.status(), StatusCode::OK, "{path}");
        }
    }

    #[test]
    fn other_paths_and_methods_are_not_the_console_s() {
        assert!(get("/shoal/console/secret.txt", None).is_none());
        assert!(get("/shoal/consoles", None).is_none());
        assert!(!is_console_path("/shoal/consoles"));
        assert!(is_console_path("/shoal/console"));
        assert!(is_console_path("/shoal/console/x"));
        let (parts, ()) = Request::post("/shoal/console")
            .body(())
            .unwrap()
            .into_parts();
        assert!(answer(&parts, "id").is_none());
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for asset in [&INDEX, &SCRIPT, &STYLE] {
            // The one URL the files hold is the SVG namespace, a name that is never fetched.
            let outside = asset
                .body
                .replace("'http://www.w3.org/2000/svg'", "")
                .contains("://");
            assert!(!outside, "a console file names another origin");
            assert!(!asset.body.contains("@import"));
        }
    }
}
