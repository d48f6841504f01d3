//! (to be written)

use axum::Router;

use super::WebContext;

pub fn routes() -> Router<WebContext> {
    Router::new()
}
