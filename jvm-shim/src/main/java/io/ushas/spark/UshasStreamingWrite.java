package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.sources.Filter;

/**
 * A streaming query writing into a table of the catalog ({@code writeStream.toTable("ushas.db.t")}):
 * each micro-batch is one {@link UshasBatchWrite} (its own staging directory, Spark's file writers,
 * one fenced metadata commit), made when Spark asks for the batch's writer factory and committed with
 * the query id and the batch id (Spark's epoch id). Python commits a (query id, batch id) once: the
 * table records the last batch each query committed, in the commit's own transaction, so a batch
 * that Spark runs again after a restart (its commit log did not have it yet) registers nothing again
 * and its files are taken back out. Append writes each batch's rows; complete mode replaces the
 * table's rows with each batch's (truncate).
 */
final class UshasStreamingWrite implements StreamingWrite {
    private final UshasTable table;
    private final LogicalWriteInfo info;
    private final String mode;
    private final String queryId;
    /** the micro-batch's write whose factory was handed out (Spark runs one batch of a query at a time and
     *  gives the epoch id only to the writers and to commit) */
    private volatile UshasBatchWrite preparing;
    private final UshasWrite owner;

    UshasStreamingWrite(UshasTable table, LogicalWriteInfo info, String mode, UshasWrite owner) {
        this.table = table;
        this.info = info;
        this.mode = mode;
        this.owner = owner;
        this.queryId = info.queryId();
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo physical) {
        UshasBatchWrite batch = UshasBatchWrite.create(table, info, mode, new Filter[0], null).reportingTo(owner);
        preparing = batch;
        return new Factory(batch.createBatchWriterFactory(physical));
    }

    private UshasBatchWrite batch(long epochId) {
        UshasBatchWrite b = preparing;
        preparing = null;
        if (b == null) {
            throw new Errors.UshasBridgeException("Ushas catalog: micro-batch " + epochId + " of query " + queryId
                    + " into " + table.name() + " has no write to commit");
        }
        return b.forMicroBatch(queryId, epochId);
    }

    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        batch(epochId).commit(messages);
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        UshasBatchWrite b = preparing;
        preparing = null;
        if (b != null) b.forMicroBatch(queryId, epochId).abort(messages);
    }

    @Override
    public String toString() {
        return "UshasStreamingWrite(" + table.name() + ", " + mode + ", query " + queryId + ")";
    }

    /** Spark's file writers of one micro-batch (the epoch id is the batch's, already known to its write). */
    static final class Factory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final DataWriterFactory files;

        Factory(DataWriterFactory files) {
            this.files = files;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            return files.createWriter(partitionId, taskId);
        }
    }
}
