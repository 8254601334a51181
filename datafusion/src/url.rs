//! `FROM 'weather.mb'`: column files named in SQL by their path or URL.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::DynamicFileCatalog;
use datafusion::catalog::{Session, TableProvider, UrlTableFactory};
use datafusion::common::Result;
use datafusion::datasource::dynamic_file::DynamicListTableFactory;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::execution::context::SessionContext;
use datafusion::execution::session_state::SessionState;
use datafusion_session::SessionStore;

use crate::{MiniblockFormatFactory, MiniblockTable, FILE_EXTENSION};

/// `ctx` with tables named by path in SQL, as DataFusion's own
/// `SessionContext::enable_url_table` does for Parquet, CSV and JSON: a path or URL
/// ending in `.mb`, a glob of them (`'dir/*.mb'`) or a directory holding `.mb` files
/// reads as a [`MiniblockTable`]; any other goes to DataFusion's own factory
/// (`FROM 'x.parquet'`).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use datafusion::prelude::SessionContext;
/// let ctx = miniblock_datafusion::enable_url_table(SessionContext::new());
/// let err = ctx.sql("SELECT * FROM 'no/such/dir/*.mb'").await.unwrap_err();
/// assert!(err.to_string().contains("no column files"), "{err}");
/// # });
/// ```
pub fn enable_url_table(ctx: SessionContext) -> SessionContext {
    let session = SessionStore::new();
    let factory = Arc::new(MiniblockUrlTables {
        session: SessionStore::new(),
        others: DynamicListTableFactory::new(session),
    });
    let catalogs = Arc::new(DynamicFileCatalog::new(
        Arc::clone(ctx.state().catalog_list()),
        Arc::clone(&factory) as Arc<dyn UrlTableFactory>,
    ));
    let session_id = ctx.session_id();
    let ctx: SessionContext = ctx
        .into_state_builder()
        .with_session_id(session_id)
        .with_catalog_list(catalogs)
        .build()
        .into();
    // `COPY ... TO 'x.mb'` finds the format by its extension, `STORED AS MB` by its
    // table factory and then the format.
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        state
            .register_file_format(Arc::new(MiniblockFormatFactory), true)
            .expect("registering a file format with overwrite cannot fail");
        state.table_factories_mut().insert(
            "MB".into(),
            Arc::new(datafusion::datasource::listing_table_factory::ListingTableFactory::new()),
        );
    }
    factory.session.with_state(ctx.state_weak_ref());
    factory
        .others
        .session_store()
        .with_state(ctx.state_weak_ref());
    ctx
}

#[derive(Debug)]
struct MiniblockUrlTables {
    session: SessionStore,
    others: DynamicListTableFactory,
}

#[async_trait]
impl UrlTableFactory for MiniblockUrlTables {
    async fn try_new(&self, url: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if !names_column_files(url) {
            // DataFusion's own factory says only "table not found" for an empty folder.
            if is_empty_local_dir(url) {
                return Err(datafusion::common::DataFusionError::Plan(format!(
                    "{url} is an empty directory: no column files (.mb) or other tables in it"
                )));
            }
            return self.others.try_new(url).await;
        }
        let Some(session) = self.session.get_session().upgrade() else {
            return Ok(None);
        };
        let state: SessionState = match session.read().as_any().downcast_ref::<SessionState>() {
            Some(state) => state.clone(),
            None => return Ok(None),
        };
        let table = MiniblockTable::open(&state as &dyn Session, url).await?;
        Ok(Some(Arc::new(table)))
    }
}

/// Whether `url` names column files: ends in `.mb` (a file or a glob), or is a local
/// directory holding some.
fn names_column_files(url: &str) -> bool {
    if url.ends_with(FILE_EXTENSION) {
        return true;
    }
    let Ok(table_url) = ListingTableUrl::parse(url) else {
        return false;
    };
    table_url.is_folder()
        && std::fs::read_dir(table_url.prefix().as_ref())
            .or_else(|_| std::fs::read_dir(format!("/{}", table_url.prefix())))
            .is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(FILE_EXTENSION))
            })
}

/// Whether `url` is a local directory with nothing in it.
fn is_empty_local_dir(url: &str) -> bool {
    let path = std::path::Path::new(url.strip_prefix("file://").unwrap_or(url));
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}
