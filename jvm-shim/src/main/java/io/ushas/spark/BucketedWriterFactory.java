package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.SparkHadoopWriterUtils;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.execution.datasources.DynamicPartitionDataSingleWriter;
import org.apache.spark.sql.execution.datasources.WriteJobDescription;
import org.apache.spark.sql.execution.datasources.WriterBucketSpec;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;

/**
 * The task writers of a bucketed table's write. Spark's V2 {@code FileWriterFactory} writes an
 * unpartitioned table with a writer that ignores buckets; this factory always uses Spark's
 * {@link DynamicPartitionDataSingleWriter}, which names each file by its bucket ({@code part-…_00003.c000…},
 * Spark's bucket file naming, so the V1 file path reads the files as buckets), exactly as Spark's own
 * bucketed writes do. The task attempt context is made as {@code FileWriterFactory} makes it.
 */
final class BucketedWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final WriteJobDescription description;
    private final FileCommitProtocol committer;
    private final String jobTrackerId = SparkHadoopWriterUtils.createJobTrackerID(new Date());

    BucketedWriterFactory(WriteJobDescription description, FileCommitProtocol committer) {
        this.description = description;
        this.committer = committer;
    }

    /** Spark's bucket id of a row: pmod(murmur3(bucket columns), n), the hash partitioning's id. */
    static Option<WriterBucketSpec> writerSpec(Bucketing bucketing, List<Attribute> all) {
        if (bucketing == null) return Option.empty();
        List<Expression> cols = new ArrayList<>();
        for (String c : bucketing.columns) {
            cols.add(all.stream().filter(a -> a.name().equalsIgnoreCase(c)).findFirst()
                    .orElseThrow(() -> Errors.invalidArgument("bucket column " + c + " is not written")));
        }
        Expression id = new HashPartitioning(CollectionConverters.asScala(cols).toList(), bucketing.numBuckets)
                .partitionIdExpression();
        return Option.apply(new WriterBucketSpec(id, new NoPrefix()));
    }

    /** Spark's bucketed writes name files with the bucket id as a suffix only. */
    static final class NoPrefix extends scala.runtime.AbstractFunction1<Object, String> implements Serializable {
        private static final long serialVersionUID = 1L;

        @Override
        public String apply(Object bucketId) {
            return "";
        }
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        JobID jobId = SparkHadoopWriterUtils.createJobID(jobTrackerId, 0);
        TaskID task = new TaskID(jobId, TaskType.MAP, partitionId);
        TaskAttemptID attempt = new TaskAttemptID(task, (int) (taskId & Integer.MAX_VALUE));
        Configuration conf = description.serializableHadoopConf().value();
        conf.set("mapreduce.job.id", jobId.toString());
        conf.set("mapreduce.task.id", task.toString());
        conf.set("mapreduce.task.attempt.id", attempt.toString());
        conf.setBoolean("mapreduce.task.ismap", true);
        conf.setInt("mapreduce.task.partition", 0);
        TaskAttemptContextImpl context = new TaskAttemptContextImpl(conf, attempt);
        committer.setupTask(context);
        return new DynamicPartitionDataSingleWriter(description, context, committer,
                scala.collection.immutable.Map$.MODULE$.empty());
    }
}
