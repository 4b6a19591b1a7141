package io.ushas.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.execution.QueryExecution;

/**
 * A streaming micro-batch's execution (Spark's {@code IncrementalExecution}) and its ids: the query id
 * (kept in the checkpoint), the run id (this start of the query) and the batch id. Read by name:
 * the class moved packages between Spark versions ({@code execution.streaming[.runtime]}).
 */
final class MicroBatches {
    private static final String CLASS = "IncrementalExecution";

    private MicroBatches() {}

    static boolean isMicroBatch(QueryExecution qe) {
        return qe != null && qe.getClass().getSimpleName().equals(CLASS);
    }

    /** {query_id, run_id, batch_id} of a micro-batch's execution, or null for any other execution. */
    static ObjectNode ids(QueryExecution qe) {
        if (!isMicroBatch(qe)) return null;
        try {
            ObjectNode o = Json.object();
            o.put("query_id", String.valueOf(qe.getClass().getMethod("queryId").invoke(qe)));
            o.put("run_id", String.valueOf(qe.getClass().getMethod("runId").invoke(qe)));
            o.put("batch_id", ((Number) qe.getClass().getMethod("currentBatchId").invoke(qe)).longValue());
            return o;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
