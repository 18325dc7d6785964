//! The connections between a coordinator and its workers: the token every request carries, and
//! the time limits that make a dead or silent worker an error rather than a hang.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow_flight::flight_service_client::FlightServiceClient;
use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_distributed::grpc::{BoxCloneSyncChannel, create_worker_client};
use datafusion_distributed::{
    ChannelResolver, CoordinatorToWorkerMsg, ExecuteTaskRequest, GetWorkerInfoRequest,
    GetWorkerInfoResponse, SetPlanRequest, WorkerChannel, WorkerToCoordinatorMsg,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};
use url::Url;

use crate::error::{Error, Result};

/// The request header that carries the cluster's token.
pub const TOKEN_HEADER: &str = "x-nvpage-token";

/// How long a connection to a worker may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is pinged this often, and dropped when a ping goes this long unanswered: a
/// worker that stopped answering (its machine gone, the process stopped) ends the query within
/// about twice this.
pub const KEEPALIVE: Duration = Duration::from_secs(5);

/// Adds the token to every request a client sends.
#[derive(Clone)]
pub(crate) struct AddToken(MetadataValue<Ascii>);

impl AddToken {
    pub(crate) fn new(token: &str) -> Result<Self> {
        token
            .parse()
            .map(Self)
            .map_err(|_| Error::Config("the token must be printable ASCII".into()))
    }
}

impl Interceptor for AddToken {
    fn call(&mut self, mut req: Request<()>) -> std::result::Result<Request<()>, Status> {
        req.metadata_mut().insert(TOKEN_HEADER, self.0.clone());
        Ok(req)
    }
}

/// Refuses every request that does not carry the token.
#[derive(Clone)]
pub(crate) struct CheckToken(pub(crate) Arc<str>);

impl Interceptor for CheckToken {
    fn call(&mut self, req: Request<()>) -> std::result::Result<Request<()>, Status> {
        match req.metadata().get(TOKEN_HEADER) {
            Some(v) if same(v.as_bytes(), self.0.as_bytes()) => Ok(req),
            _ => {
                Err(Status::unauthenticated("nvpage worker: the cluster token is missing or wrong"))
            }
        }
    }
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An endpoint for `url` with the cluster's time limits.
fn endpoint(url: &str) -> std::result::Result<Endpoint, tonic::transport::Error> {
    Ok(Endpoint::from_shared(url.to_string())?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEPALIVE)
        .keep_alive_timeout(KEEPALIVE)
        .keep_alive_while_idle(true))
}

/// A Flight client of the worker at `url`, sending `token`.
pub(crate) type Client = FlightServiceClient<InterceptedService<Channel, AddToken>>;

/// Connects to the worker at `url` (`http://host:port`).
pub(crate) async fn connect(url: &str, token: &str) -> Result<Client> {
    let channel = endpoint(url)
        .map_err(|e| Error::worker(url, e))?
        .connect()
        .await
        .map_err(|e| Error::worker(url, format!("cannot connect: {}", source_chain(&e))))?;
    Ok(FlightServiceClient::with_interceptor(channel, AddToken::new(token)?)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX))
}

/// An error and its sources, one after another (tonic's own message is only "transport error").
pub(crate) fn source_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        next = cause.source();
    }
    s
}

/// The distributed engine's connections between processes, with the cluster's time limits
/// (its default connects with none); one channel per worker, reused.
#[derive(Clone, Default)]
pub(crate) struct Channels {
    open: Arc<Mutex<HashMap<Url, Channel>>>,
}

#[async_trait]
impl ChannelResolver for Channels {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> std::result::Result<Box<dyn WorkerChannel>, DataFusionError> {
        let known = self.open.lock().get(url).cloned();
        let channel = match known {
            Some(c) => c,
            None => {
                let name = url.as_str().trim_end_matches('/');
                let c = endpoint(name)
                    .map_err(|e| DataFusionError::from(Error::worker(name, e)))?
                    .connect()
                    .await
                    .map_err(|e| {
                        DataFusionError::from(Error::worker(
                            name,
                            format!("cannot connect: {}", source_chain(&e)),
                        ))
                    })?;
                self.open.lock().insert(url.clone(), c.clone());
                c
            }
        };
        let inner = create_worker_client(BoxCloneSyncChannel::new(channel));
        Ok(Box::new(Named { url: url.as_str().trim_end_matches('/').to_string(), inner }))
    }
}

/// A worker's channel whose errors name the worker (the distributed engine's own say only what
/// broke: "h2 protocol error", "broken pipe").
struct Named {
    url: String,
    inner: Box<dyn WorkerChannel>,
}

impl Named {
    fn err(url: &str, e: DataFusionError) -> DataFusionError {
        if e.to_string().contains(url) {
            return e;
        }
        DataFusionError::from(Error::worker(url, e))
    }

    fn stream<T: Send + 'static>(
        &self,
        s: BoxStream<'static, DfResult<T>>,
    ) -> BoxStream<'static, DfResult<T>> {
        let url = self.url.clone();
        s.map(move |r| r.map_err(|e| Self::err(&url, e))).boxed()
    }
}

#[async_trait]
impl WorkerChannel for Named {
    async fn coordinator_channel(
        &mut self,
        headers: http::HeaderMap,
        set_plan_request: SetPlanRequest,
        c2w_stream: BoxStream<'static, CoordinatorToWorkerMsg>,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> DfResult<BoxStream<'static, DfResult<WorkerToCoordinatorMsg>>> {
        let s = self
            .inner
            .coordinator_channel(headers, set_plan_request, c2w_stream, metrics, task_ctx)
            .await
            .map_err(|e| Self::err(&self.url, e))?;
        Ok(self.stream(s))
    }

    async fn execute_task(
        &mut self,
        headers: http::HeaderMap,
        request: ExecuteTaskRequest,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> DfResult<Vec<BoxStream<'static, DfResult<RecordBatch>>>> {
        let streams = self
            .inner
            .execute_task(headers, request, metrics, task_ctx)
            .await
            .map_err(|e| Self::err(&self.url, e))?;
        Ok(streams.into_iter().map(|s| self.stream(s)).collect())
    }

    async fn get_worker_info(
        &mut self,
        request: GetWorkerInfoRequest,
    ) -> DfResult<GetWorkerInfoResponse> {
        self.inner.get_worker_info(request).await.map_err(|e| Self::err(&self.url, e))
    }
}
