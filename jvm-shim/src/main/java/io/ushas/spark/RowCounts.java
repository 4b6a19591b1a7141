package io.ushas.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.BasicWriteTaskStats;
import org.apache.spark.sql.execution.datasources.WriteJobStatsTracker;
import org.apache.spark.sql.execution.datasources.WriteTaskStats;
import org.apache.spark.sql.execution.datasources.WriteTaskStatsTracker;

/**
 * The write statistics a direct write ({@link DirectCommitProtocol}) needs: the rows and files each task
 * wrote, without Spark's {@code BasicWriteTaskStatsTracker}, which asks the file system for the size of
 * every file it closes (on {@code file:} five system calls a file: owner and permissions too). The sizes
 * come from the task's commit message instead (one {@code stat} a file), which also sets the task's
 * bytes-written metric; this sets its records-written metric, as Spark's tracker does.
 */
final class RowCounts implements WriteJobStatsTracker {
    private static final long serialVersionUID = 1L;

    @Override
    public WriteTaskStatsTracker newTaskInstance() {
        return new WriteTaskStatsTracker() {
            private long rows;
            private int files;

            @Override
            public void newPartition(InternalRow partitionValues) {
            }

            @Override
            public void newFile(String filePath) {
                files++;
            }

            @Override
            public void closeFile(String filePath) {
            }

            @Override
            public void newRow(String filePath, InternalRow row) {
                rows++;
            }

            @Override
            public WriteTaskStats getFinalStats(long taskCommitTime) {
                TaskContext task = TaskContext.get();
                if (task != null) task.taskMetrics().outputMetrics().setRecordsWritten(rows);
                return new BasicWriteTaskStats(scala.collection.immutable.List$.MODULE$.empty(), files, 0L, rows);
            }
        };
    }

    @Override
    public void processStats(scala.collection.immutable.Seq<WriteTaskStats> stats, long jobCommitTime) {
    }
}
