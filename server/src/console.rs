//! The web console at `/shoal/console` (`shoal serve --console`): three files built into
//! the binary (`console/index.html`, `console.css`, `console.js`), no build step, nothing
//! fetched from elsewhere. The page calls the server's own DynamoDB API (`POST /` with
//! `X-Amz-Target`, as any client) and the admin API, so everything it shows is what a
//! client would see. It is served under the admin API's rule: loopback clients only,
//! unless remote admin clients are allowed.
//!
//! Each file answers with its content type and an `ETag` (CRC32 and length of its bytes).
//! The page itself is sent with `Cache-Control: no-cache`: a browser asks again on every
//! load and gets `304 Not Modified` while the binary is the same. The page links the script
//! and the style sheet with their tag in the URL (`console.js?v=TAG`), and a file asked for
//! with its current tag is sent as `immutable` for a year: a browser that has them loads
//! only the page, one round trip, and a new binary's page names new URLs. A file asked for
//! without its tag (or with an old one) is sent `no-cache`, as the page is.

use crate::response::response;
use bytes::Bytes;
use http::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use http::request::Parts;
use http::{HeaderValue, Method, Response, StatusCode};
use http_body_util::Full;
use std::sync::LazyLock;

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

/// A file as served: its bytes, its content type and its tag.
struct Served {
    content_type: &'static str,
    body: Bytes,
    /// CRC32 and length of the bytes, in hex: the `ETag` (quoted) and the `v=` of its URL.
    tag: String,
    /// Whether a request for it naming its tag may be cached for good: the script and the
    /// style sheet, whose URLs in the page change with their bytes.
    versioned: bool,
}

impl Served {
    fn new(asset: &Asset, body: Bytes, versioned: bool) -> Served {
        Served {
            content_type: asset.content_type,
            tag: format!("{:08x}-{:x}", crc32fast::hash(&body), body.len()),
            body,
            versioned,
        }
    }
}

/// The three files, built once: the page with its links to the other two naming their tags.
struct Console {
    index: Served,
    script: Served,
    style: Served,
}

static CONSOLE: LazyLock<Console> = LazyLock::new(|| {
    let script = Served::new(&SCRIPT, Bytes::from_static(SCRIPT.body.as_bytes()), true);
    let style = Served::new(&STYLE, Bytes::from_static(STYLE.body.as_bytes()), true);
    let page = INDEX
        .body
        .replace(SCRIPT_URL, &format!("{SCRIPT_URL}?v={}", script.tag))
        .replace(STYLE_URL, &format!("{STYLE_URL}?v={}", style.tag));
    Console {
        index: Served::new(&INDEX, Bytes::from(page), false),
        script,
        style,
    }
});

const SCRIPT_URL: &str = "/shoal/console/console.js";
const STYLE_URL: &str = "/shoal/console/console.css";

/// The file at `path` (under [`CONSOLE_PATH`]), if there is one.
fn served(path: &str) -> Option<&'static Served> {
    let console = &*CONSOLE;
    match path.strip_prefix(CONSOLE_PATH)? {
        "" | "/" | "/index.html" => Some(&console.index),
        "/console.js" => Some(&console.script),
        "/console.css" => Some(&console.style),
        _ => None,
    }
}

/// How long a browser may keep a file asked for by its tagged URL: a year, the longest
/// HTTP caches are asked to honour.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

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
    let file = served(parts.uri.path())?;
    let tag = format!("\"{}\"", file.tag);
    let unchanged = parts
        .headers
        .get(IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|sent| sent.split(',').any(|one| one.trim() == tag));
    let (status, body) = if unchanged {
        (StatusCode::NOT_MODIFIED, Bytes::new())
    } else {
        (StatusCode::OK, file.body.clone())
    };
    let tagged = file.versioned
        && parts.uri.query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair.strip_prefix("v=") == Some(file.tag.as_str()))
        });
    let mut answer = response(status, file.content_type, body, request_id);
    let headers = answer.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(ETAG, value);
    }
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static(if tagged { IMMUTABLE } else { "no-cache" }),
    );
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

    #[tokio::test]
    async fn the_page_links_its_files_by_tag_and_those_are_kept_for_good() {
        let page = body_of(get("/shoal/console", None).unwrap()).await;
        for path in ["/shoal/console/console.js", "/shoal/console/console.css"] {
            let plain = get(path, None).unwrap();
            assert_eq!(plain.headers()[CACHE_CONTROL], "no-cache", "{path}");
            let tag = plain.headers()[ETAG]
                .to_str()
                .unwrap()
                .trim_matches('"')
                .to_owned();
            let tagged = format!("{path}?v={tag}");
            assert!(
                page.contains(&format!("\"{tagged}\"")),
                "{page} lacks {tagged}"
            );
            let kept = get(&tagged, None).unwrap();
            assert_eq!(kept.status(), StatusCode::OK);
            assert_eq!(kept.headers()[CACHE_CONTROL], IMMUTABLE, "{tagged}");
            assert_eq!(body_of(kept).await, body_of(plain).await);
            // A page of another build names another tag: its file is not kept for good.
            let old = get(&format!("{path}?v=00000000-0"), None).unwrap();
            assert_eq!(old.headers()[CACHE_CONTROL], "no-cache", "{path}");
        }
        // The page itself is asked for again on every load.
        let again = get("/shoal/console?v=x", None).unwrap();
        assert_eq!(again.headers()[CACHE_CONTROL], "no-cache");
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
