//! sysbench's point select (`SELECT c FROM sbtestN WHERE id=?`, prepared) served by
//! opensrv-mysql, each read sent through Kista's native client with a callback that wakes
//! the connection's task: the same cluster round trip `kista sql` makes, behind a tokio
//! runtime instead of a thread per connection. Anything else gets an empty OK, so sysbench
//! can connect; only `run` of oltp_point_select is served (prepare with `kista sql`).
//!
//!     opensrv-point-select MGM_HOST:PORT LISTEN_PORT [WORKER_THREADS=2]

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use kista_client::types::Value;
use kista_client::{Client, ExecuteMode, LockKind, Table};
use opensrv_mysql::*;
use tokio::io::AsyncWrite;
use tokio::net::TcpListener;

/// Column `c` of sysbench's tables (id, k, c, pad).
const COLUMN_C: u16 = 2;

struct Backend {
    client: Arc<Client>,
    /// Statement id (the table's number) → the table.
    tables: HashMap<u32, Table>,
    params: [Column; 1],
    columns: [Column; 1],
}

fn column(name: &str, coltype: ColumnType) -> Column {
    Column {
        table: String::new(),
        column: name.to_string(),
        coltype,
        colflags: ColumnFlags::empty(),
    }
}

#[async_trait::async_trait]
impl<W: AsyncWrite + Send + Unpin> AsyncMysqlShim<W> for Backend {
    type Error = io::Error;

    async fn on_prepare<'a>(
        &'a mut self,
        sql: &'a str,
        info: StatementMetaWriter<'a, W>,
    ) -> io::Result<()> {
        let number: u32 = sql
            .split("sbtest")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if !self.tables.contains_key(&number) {
            let name = format!("sbtest/sbtest{number}");
            match self.client.open_table(&name) {
                Ok(table) => {
                    self.tables.insert(number, table);
                }
                Err(error) => {
                    let message = format!("{name}: {error}");
                    return info
                        .error(ErrorKind::ER_NO_SUCH_TABLE, message.as_bytes())
                        .await;
                }
            }
        }
        info.reply(number, &self.params, &self.columns).await
    }

    async fn on_execute<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        let key = params
            .into_iter()
            .next()
            .and_then(|p| match p.value.into_inner() {
                ValueInner::Int(v) => Some(v),
                ValueInner::UInt(v) => Some(v as i64),
                _ => None,
            });
        let (Some(table), Some(key)) = (self.tables.get(&id), key) else {
            return results
                .error(ErrorKind::ER_UNKNOWN_ERROR, b"bad execute")
                .await;
        };
        let (done, answer) = tokio::sync::oneshot::channel();
        let mut transaction = self.client.transaction();
        let sent = transaction
            .read_columns(
                table,
                &[Value::Int(key)],
                LockKind::Committed,
                vec![COLUMN_C],
            )
            .and_then(|op| {
                transaction.execute_then(ExecuteMode::Commit, move |result| {
                    let row = result.map(|executed| executed.row(op).map(|row| row.to_vec()));
                    let _ = done.send(row);
                })
            });
        if let Err(error) = sent {
            return results
                .error(ErrorKind::ER_UNKNOWN_ERROR, error.to_string().as_bytes())
                .await;
        }
        match answer.await {
            Ok(Ok(row)) => {
                let mut rows = results.start(&self.columns).await?;
                if let Some(row) = row {
                    if let Some(Value::Bytes(c)) = row.first() {
                        rows.write_col(c.as_slice())?;
                        rows.end_row().await?;
                    }
                }
                rows.finish().await
            }
            Ok(Err(error)) => {
                results
                    .error(ErrorKind::ER_UNKNOWN_ERROR, error.to_string().as_bytes())
                    .await
            }
            Err(_) => {
                results
                    .error(ErrorKind::ER_UNKNOWN_ERROR, b"no answer")
                    .await
            }
        }
    }

    async fn on_close(&mut self, _: u32) {}

    /// (The trait's default answers nothing, which leaves a client that names a database
    /// waiting forever.)
    async fn on_init<'a>(&'a mut self, _: &'a str, writer: InitWriter<'a, W>) -> io::Result<()> {
        writer.ok().await
    }

    async fn on_query<'a>(
        &'a mut self,
        _: &'a str,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        results.completed(OkResponse::default()).await
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mgm), Some(port)) = (args.get(1), args.get(2)) else {
        return Err(
            "usage: opensrv-point-select MGM_HOST:PORT LISTEN_PORT [WORKER_THREADS]".into(),
        );
    };
    let workers: usize = args.get(3).map_or(Ok(2), |w| w.parse())?;
    let client = Arc::new(Client::connect_cluster(mgm)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
        println!("opensrv-point-select: ready");
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let (reader, writer) = stream.into_split();
            let backend = Backend {
                client: Arc::clone(&client),
                tables: HashMap::new(),
                params: [column("id", ColumnType::MYSQL_TYPE_LONG)],
                columns: [column("c", ColumnType::MYSQL_TYPE_STRING)],
            };
            tokio::spawn(async move {
                let _ = AsyncMysqlIntermediary::run_on(backend, reader, writer).await;
            });
        }
    })
}
