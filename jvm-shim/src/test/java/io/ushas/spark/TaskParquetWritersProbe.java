package io.ushas.spark;

/** Test-only: how many files this JVM's catalog writes opened with a task's shared Parquet set-up. */
public final class TaskParquetWritersProbe {
    private TaskParquetWritersProbe() {}

    public static long sharedFiles() {
        return TaskParquetWriters.sharedFiles();
    }
}
