package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The files of a MERGE's group that no source row can match, found from the bounds of a key column in their
 * parquet footers (docs/row-level.md, "the probe form"): a file none of whose row groups' [min, max] of the key
 * holds a source key (nor, for a {@code <=>} with a NULL source key, a NULL) has no matched row, so a MERGE that
 * only carries unmatched target rows over (no {@code WHEN NOT MATCHED BY SOURCE} clause) leaves it as it is: its
 * scan does not read it and its write does not replace it. What Spark's runtime group filter finds with a job
 * over the group's key column, from a footer a file; a file without the column's statistics is read as before.
 */
final class MergeFileSkipping {
    /** the session setting that turns it off ({@code false}): every file of the group is read and replaced */
    static final String CONF = "spark.ushas.merge.skipFilesByFooters";

    /** the most files whose footers are read (a bigger group is read whole, as before) */
    static final int MAX_FILES = 1_000;

    private MergeFileSkipping() {
    }

    /** The files a scan skips: set on the driver before the scan's job starts (its tasks get it with the scan's
     *  reader, serialized then) and read by the write's commit (it does not replace them). */
    static final class Skipped implements Serializable {
        private volatile Set<String> paths = Set.of();

        void set(Set<String> skipped) {
            paths = Set.copyOf(skipped);
        }

        boolean contains(String path) {
            return paths.contains(path);
        }
    }

    /** The paths of {@code files} whose row groups' bounds of the top-level INT32 / INT64 {@code column} hold
     *  none of {@code keys} (sorted; the key's values as longs), nor a NULL when {@code nullKey}; the footers read
     *  in parallel (an object store's reads are slow, not heavy); a file whose footer cannot be read or has no
     *  bounds for the column is not among them. */
    static Set<String> unmatched(List<FileStatus> files, Configuration conf, String column, long[] keys,
                                 boolean nullKey) {
        if (files.isEmpty() || files.size() > MAX_FILES) return Set.of();
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(8, files.size()), r -> {
            Thread t = new Thread(r, "ushas-merge-footers");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<Boolean>> answers = new ArrayList<>();
            for (FileStatus f : files) answers.add(pool.submit(() -> noMatch(f, conf, column, keys, nullKey)));
            Set<String> out = new HashSet<>();
            for (int i = 0; i < files.size(); i++) {
                try {
                    if (answers.get(i).get()) out.add(files.get(i).getPath().toString());
                } catch (java.util.concurrent.ExecutionException unreadable) {
                    // read as before: the scan reports what is wrong with the file as Spark does
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return Set.of();
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private static boolean noMatch(FileStatus f, Configuration conf, String column, long[] keys, boolean nullKey)
            throws java.io.IOException {
        ParquetMetadata footer = ParquetFileReader.readFooter(HadoopInputFile.fromStatus(f, conf),
                ParquetMetadataConverter.NO_FILTER);
        for (BlockMetaData block : footer.getBlocks()) {
            if (block.getRowCount() == 0) continue;
            ColumnChunkMetaData chunk = null;
            for (ColumnChunkMetaData c : block.getColumns()) {
                if (c.getPath().size() == 1 && c.getPath().toArray()[0].equalsIgnoreCase(column)) chunk = c;
            }
            if (chunk == null) return false;
            Statistics<?> st = chunk.getStatistics();
            if (st == null || st.isEmpty()) return false;
            if (nullKey && st.getNumNulls() != 0) return false;  // a NULL (or an unknown count of them) may match
            if (!st.hasNonNullValue()) continue;  // NULLs only
            if (!(st.genericGetMin() instanceof Number min) || !(st.genericGetMax() instanceof Number max)) return false;
            if (holds(keys, min.longValue(), max.longValue())) return false;
        }
        return true;
    }

    /** Whether sorted {@code keys} has a value in [min, max]. */
    static boolean holds(long[] keys, long min, long max) {
        int at = Arrays.binarySearch(keys, min);
        if (at < 0) at = -at - 1;
        return at < keys.length && keys[at] <= max;
    }
}
