//! Tools that report each run: for a host that serves its tools to an agent runtime over MCP
//! (patchbay-claude-agent, patchbay-acp) and wants the tools' own results beside the runtime's
//! account of the calls.

use std::sync::Arc;

use async_trait::async_trait;
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSet, ToolSpec};
use serde_json::Value;

type Report = Arc<dyn Fn(&str, &Value, &ToolResult) + Send + Sync>;

/// `tools`, each wrapped so that `report` sees its name, input and result after every run
/// (the result is returned unchanged). Register the set with
/// [`ToolServer::register_with_tools`](crate::ToolServer::register_with_tools).
pub fn reporting_tools(tools: &ToolSet, report: impl Fn(&str, &Value, &ToolResult) + Send + Sync + 'static) -> ToolSet {
    let report: Report = Arc::new(report);
    let mut reporting = ToolSet::new();
    for tool in tools.iter() {
        let _ = reporting.insert(Arc::new(Reporting {
            inner: tool.clone(),
            report: report.clone(),
        }));
    }
    reporting
}

struct Reporting {
    inner: Arc<dyn Tool>,
    report: Report,
}

#[async_trait]
impl Tool for Reporting {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let result = self.inner.execute(input.clone(), cx).await;
        (self.report)(&self.inner.spec().name, &input, &result);
        result
    }
}
