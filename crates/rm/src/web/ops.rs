//! (to be written)

use axum::Router;

use super::WebContext;

pub fn routes() -> Router<WebContext> {
    Router::new()
}

/// The layers around every route (a standby RM's redirect).
pub fn around(routes: Router, _web: WebContext) -> Router {
    routes
}
