//! The http scenario's `hyper` variants (feature "hyper"): one hyper 1.x
//! service per connection that answers `GET /ping/<token>` with the token
//! (200, text/plain; hyper adds Content-Length and Date) and anything else
//! with 404. hyper answers malformed requests with 400 itself, and closes.
//!
//! The service counts in a plain cell (it belongs to its connection) and
//! hands its counts to `on_end` when hyper drops it, i.e. when the
//! connection ends: no shared counter is touched per request.

use std::cell::Cell;
use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::{ping_token, Counts};

pub struct Ping<F: FnMut(&Counts)> {
    counts: Cell<Counts>,
    on_end: F,
}

impl<F: FnMut(&Counts)> Ping<F> {
    /// `on_end` receives the connection's counts when it ends.
    pub fn new(on_end: F) -> Ping<F> {
        Ping { counts: Cell::new(Counts::default()), on_end }
    }
}

impl<F: FnMut(&Counts)> hyper::service::Service<Request<Incoming>> for Ping<F> {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let mut c = self.counts.get();
        // The request target as sent (a query string makes it a 404, as in
        // the httparse variant).
        let target = req.uri().path_and_query().map_or("", |p| p.as_str());
        let resp = match ping_token(req.method().as_str(), target) {
            Some(token) => {
                c.requests += 1;
                let mut r = Response::new(Full::new(Bytes::copy_from_slice(token.as_bytes())));
                r.headers_mut()
                    .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain"));
                r
            }
            None => {
                c.not_found += 1;
                let mut r = Response::new(Full::new(Bytes::new()));
                *r.status_mut() = StatusCode::NOT_FOUND;
                r
            }
        };
        self.counts.set(c);
        std::future::ready(Ok(resp))
    }
}

impl<F: FnMut(&Counts)> Drop for Ping<F> {
    fn drop(&mut self) {
        let c = self.counts.get();
        (self.on_end)(&c);
    }
}
