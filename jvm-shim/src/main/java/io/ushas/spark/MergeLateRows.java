package io.ushas.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.util.CollectionAccumulator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction2;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The rows a MERGE planned as {@link MergeProbe} writes for the source rows no target row matched, once the tasks
 * that read the target are done: {@link MergeProbeExec} hands this to the statement's operation, and the write's
 * commit ({@link UshasBatchWrite#commit}) calls {@link #written} before it registers anything. The source rows no
 * task marked in the accumulator (and the statement's tasks did not write already: those no file of the group could
 * match) go through the {@code WHEN NOT MATCHED} instructions ({@link MergeInserts}), projected to the table's
 * columns as the statement's write projects its rows, and written by a small job with the write's own writer
 * factory; its tasks' messages join the others, so the one commit registers them all, and a
 * failure removes what the job wrote before the statement's write is aborted.
 */
final class MergeLateRows {
    private final UnsafeRow[] source;
    private final BitSet early;
    private final CollectionAccumulator<BitSet> marks;
    private final MergeInserts inserts;
    private final ProjectingInternalRow rowProjection;

    /** {@code early}: the source rows the statement's own tasks wrote (no file of the group could match them). */
    MergeLateRows(UnsafeRow[] source, BitSet early, CollectionAccumulator<BitSet> marks, MergeInserts inserts,
                  ProjectingInternalRow rowProjection) {
        this.source = source;
        this.early = early;
        this.marks = marks;
        this.inserts = inserts;
        this.rowProjection = rowProjection;
    }

    /** The table rows of the source rows no task matched nor wrote, grouped by partition. */
    List<UnsafeRow> rows() {
        BitSet seen = (BitSet) early.clone();
        for (BitSet b : marks.value()) seen.or(b);
        int[] unmatched = new int[source.length - seen.cardinality()];
        if (unmatched.length == 0) return List.of();  // the usual upsert's new keys are the early rows
        for (int i = seen.nextClearBit(0), n = 0; i < source.length; i = seen.nextClearBit(i + 1)) unmatched[n++] = i;
        List<StructField> fields = List.of(rowProjection.schema().fields());
        List<Expression> columns = new ArrayList<>();
        for (int i = 0; i < fields.size(); i++) {
            int at = (Integer) rowProjection.colOrdinals().apply(i);
            columns.add(new BoundReference(at, fields.get(i).dataType(), fields.get(i).nullable()));
        }
        UnsafeProjection toTable = UnsafeProjection.create(CollectionConverters.asScala(columns).toList());
        List<UnsafeRow> all = new ArrayList<>();
        for (InternalRow r : inserts.rows(source, unmatched, 0, unmatched.length)) all.add(toTable.apply(r).copy());
        return all;
    }

    /** {@code messages} with those of the job writing {@link #rows} (none: {@code messages} as they are). */
    WriterCommitMessage[] written(WriterCommitMessage[] messages, BatchWrite write) {
        List<UnsafeRow> rows = rows();
        if (rows.isEmpty()) return messages;
        SparkContext sc = SparkSession.active().sparkContext();
        int tasks = Math.max(1, Math.min(sc.defaultParallelism(), rows.size() / 50_000));
        List<byte[]> chunks = new ArrayList<>();
        for (int c = 0; c < tasks; c++) {
            chunks.add(MergeUnmatchedSourceExec.pack(rows.subList(rows.size() * c / tasks, rows.size() * (c + 1) / tasks)));
        }
        DataWriterFactory factory = write.createBatchWriterFactory(() -> tasks);
        WriterCommitMessage[] late = new WriterCommitMessage[tasks];
        int[] partitions = new int[tasks];
        for (int c = 0; c < tasks; c++) partitions[c] = c;
        try {
            sc.runJob(sc.parallelize(CollectionConverters.asScala(chunks).toSeq(), tasks,
                            scala.reflect.ClassTag$.MODULE$.apply(byte[].class)),
                    new WriteTask(factory, messages.length, rowProjection.schema().size()),
                    CollectionConverters.asScala(java.util.Arrays.stream(partitions).boxed().map(p -> (Object) p)
                            .toList()).toSeq(),
                    new AbstractFunction2<Object, WriterCommitMessage, scala.runtime.BoxedUnit>() {
                        @Override
                        public scala.runtime.BoxedUnit apply(Object index, WriterCommitMessage m) {
                            late[(Integer) index] = m;
                            return scala.runtime.BoxedUnit.UNIT;
                        }
                    },
                    scala.reflect.ClassTag$.MODULE$.apply(WriterCommitMessage.class));
        } catch (RuntimeException e) {
            List<WriterCommitMessage> done = new ArrayList<>();
            for (WriterCommitMessage m : late) if (m != null) done.add(m);
            try {
                write.abort(done.toArray(new WriterCommitMessage[0]));
            } catch (RuntimeException s) {
                e.addSuppressed(s);
            }
            throw e;
        }
        WriterCommitMessage[] all = java.util.Arrays.copyOf(messages, messages.length + tasks);
        System.arraycopy(late, 0, all, messages.length, tasks);
        return all;
    }

    /** A task of the late job: its rows (packed) written by a writer numbered after the statement's tasks. */
    private static final class WriteTask extends AbstractFunction2<TaskContext, scala.collection.Iterator<byte[]>,
            WriterCommitMessage> implements Serializable {
        private final DataWriterFactory factory;
        private final int first;
        private final int fields;

        WriteTask(DataWriterFactory factory, int first, int fields) {
            this.factory = factory;
            this.first = first;
            this.fields = fields;
        }

        @Override
        public WriterCommitMessage apply(TaskContext context, scala.collection.Iterator<byte[]> chunks) {
            DataWriter<InternalRow> writer = factory.createWriter(first + context.partitionId(), context.taskAttemptId());
            try {
                java.util.Iterator<InternalRow> rows = MergeUnmatchedSourceExec.unpack(
                        CollectionConverters.asJava(chunks), fields);
                while (rows.hasNext()) writer.write(rows.next());
                return writer.commit();
            } catch (Throwable e) {
                try {
                    writer.abort();
                } catch (Throwable s) {
                    e.addSuppressed(s);
                }
                throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
            } finally {
                try {
                    writer.close();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        }
    }
}
