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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What the parquet footers of a MERGE's group say about a key column (docs/row-level.md, "the probe form"): each
 * file's row groups' [min, max] of the key and whether it may hold a NULL. Two answers come of them: the files no
 * source key can be in ({@link Bounds#unmatched}: a MERGE that only carries unmatched target rows over neither reads
 * nor replaces them — what Spark's runtime group filter finds with a job over the group's key column, from a footer
 * a file), and the source keys no file of the group can hold ({@link Hits#add}: their rows match no target
 * row, so their {@code WHEN NOT MATCHED} rows are written by the statement's own job, beside the target's rows,
 * instead of after it). A file whose footer cannot be read or has no bounds for the column may hold any key.
 */
final class MergeFileSkipping {
    /** the session setting that turns it off ({@code false}): no footer is read, every file of the group is read and
     *  replaced, and the unmatched source rows are written after the target's tasks */
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

    /** One file's bounds of the key: its row groups' [min, max] (those with a non-NULL value), whether one may hold a
     *  NULL; {@code null} bounds ({@link #unknown}): any key. */
    record FileBounds(String path, long[] mins, long[] maxs, boolean mayHoldNull) {
        static FileBounds unknown(String path) {
            return new FileBounds(path, null, null, true);
        }

        boolean known() {
            return mins != null;
        }
    }

    /** The group's files' bounds of the key. */
    static final class Bounds {
        private final List<FileBounds> files;
        private final boolean anyUnknown;
        private final boolean anyNull;

        Bounds(List<FileBounds> files) {
            this.files = List.copyOf(files);
            boolean unknown = false;
            boolean nulls = false;
            for (FileBounds f : files) {
                unknown |= !f.known();
                nulls |= f.mayHoldNull();
            }
            anyUnknown = unknown;
            anyNull = nulls;
        }

        /** Whether a file of the group may hold a NULL key. */
        boolean mayHoldNull() {
            return anyUnknown || anyNull;
        }

        /** The paths of the files none of whose row groups' bounds hold any of {@code keys}, nor a NULL when
         *  {@code nullKey}. */
        Set<String> unmatched(long[] keys, boolean nullKey) {
            Hits hits = hits();
            for (long k : keys) hits.add(k);
            return hits.unmatched(nullKey);
        }

        /** A tally of the keys of a source for {@link Hits#unmatched}, taken key by key (no sort of the keys). */
        Hits hits() {
            return new Hits(files, anyUnknown);
        }
    }

    /**
     * The keys of a source, key by key, against the group's files' ranges: the ranges' ends cut the keys' line into
     * intervals, each covered by the same ranges; a key marks its interval ({@link #add}), and a file none of whose
     * ranges covers a marked interval holds no key ({@link #unmatched}).
     */
    static final class Hits {
        private final List<FileBounds> files;
        private final boolean anyUnknown;
        private final long[] starts;  // the intervals' first keys, ascending: interval j is [starts[j], starts[j+1])
        private final boolean[] covered;  // whether a range covers interval j
        private final boolean[] hit;
        /** the intervals of the last two keys {@link #add} marked (a source's keys come in runs, often two
         *  interleaved: updates and inserts), looked at before a binary search; -1: none */
        private int last = -1;
        private int before = -1;

        private Hits(List<FileBounds> files, boolean anyUnknown) {
            this.files = files;
            this.anyUnknown = anyUnknown;
            java.util.TreeSet<Long> cuts = new java.util.TreeSet<>();
            for (FileBounds f : files) {
                if (!f.known()) continue;
                for (int i = 0; i < f.mins().length; i++) {
                    cuts.add(f.mins()[i]);
                    if (f.maxs()[i] != Long.MAX_VALUE) cuts.add(f.maxs()[i] + 1);
                }
            }
            starts = cuts.stream().mapToLong(Long::longValue).toArray();
            covered = new boolean[starts.length];
            hit = new boolean[starts.length];
            for (FileBounds f : files) {
                if (!f.known()) continue;
                for (int i = 0; i < f.mins().length; i++) {
                    for (int j = interval(f.mins()[i]); j < starts.length && starts[j] <= f.maxs()[i]; j++) {
                        covered[j] = true;
                    }
                }
            }
        }

        /** Whether interval {@code j} holds {@code key} (never for -1). */
        private boolean holds(int j, long key) {
            return j >= 0 && starts[j] <= key && (j + 1 == starts.length || key < starts[j + 1]);
        }

        /** The interval holding {@code key}: the last starting at or before it (-1: before every range). */
        private int interval(long key) {
            int at = Arrays.binarySearch(starts, key);
            return at >= 0 ? at : -at - 2;
        }

        /** Marks {@code key}; whether a file of the group may hold it (a range covers it, or a file's bounds are
         *  unknown). */
        boolean add(long key) {
            int j = holds(last, key) ? last : holds(before, key) ? before : interval(key);
            if (j != last) {
                before = last;
                last = j;
            }
            if (j < 0 || !covered[j]) return anyUnknown;
            hit[j] = true;
            return true;
        }

        /** The paths of the files whose bounds are known and none of whose ranges covers a marked key, nor may hold
         *  a NULL when {@code nullKey}. */
        Set<String> unmatched(boolean nullKey) {
            Set<String> out = new HashSet<>();
            for (FileBounds f : files) {
                if (!f.known() || (nullKey && f.mayHoldNull())) continue;
                boolean holds = false;
                for (int i = 0; i < f.mins().length && !holds; i++) {
                    for (int j = interval(f.mins()[i]); j < starts.length && starts[j] <= f.maxs()[i] && !holds; j++) {
                        holds = hit[j];
                    }
                }
                if (!holds) out.add(f.path());
            }
            return out;
        }
    }

    /** The footers being read (started by {@link #read}); {@link #get} waits for them. */
    static final class Reading {
        private final ExecutorService pool;
        private final List<FileStatus> files;
        private final List<Future<FileBounds>> answers;

        private Reading(ExecutorService pool, List<FileStatus> files, List<Future<FileBounds>> answers) {
            this.pool = pool;
            this.files = files;
            this.answers = answers;
        }

        /** The bounds (null if interrupted: nothing is skipped, no key is known to be missing). */
        Bounds get() {
            try {
                List<FileBounds> out = new ArrayList<>();
                for (int i = 0; i < answers.size(); i++) {
                    try {
                        out.add(answers.get(i).get());
                    } catch (ExecutionException unreadable) {
                        // read as before: the scan reports what is wrong with the file as Spark does
                        out.add(FileBounds.unknown(files.get(i).getPath().toString()));
                    }
                }
                return new Bounds(out);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } finally {
                pool.shutdownNow();
            }
        }

        /** Stops reading (the statement failed before it needed the bounds). */
        void cancel() {
            pool.shutdownNow();
        }
    }

    /** Starts reading the footers of {@code files} for the top-level INT32 / INT64 {@code column}, in parallel (an
     *  object store's reads are slow, not heavy); null for more than {@link #MAX_FILES} files. */
    static Reading read(List<FileStatus> files, Configuration conf, String column) {
        if (files.size() > MAX_FILES) return null;
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(8, files.size())), r -> {
            Thread t = new Thread(r, "ushas-merge-footers");
            t.setDaemon(true);
            return t;
        });
        List<Future<FileBounds>> answers = new ArrayList<>();
        for (FileStatus f : files) answers.add(pool.submit(() -> bounds(f, conf, column)));
        return new Reading(pool, List.copyOf(files), answers);
    }

    private static FileBounds bounds(FileStatus f, Configuration conf, String column) throws java.io.IOException {
        String path = f.getPath().toString();
        ParquetMetadata footer = ParquetFileReader.readFooter(HadoopInputFile.fromStatus(f, conf),
                ParquetMetadataConverter.NO_FILTER);
        List<long[]> ranges = new ArrayList<>();
        boolean nulls = false;
        for (BlockMetaData block : footer.getBlocks()) {
            if (block.getRowCount() == 0) continue;
            ColumnChunkMetaData chunk = null;
            for (ColumnChunkMetaData c : block.getColumns()) {
                if (c.getPath().size() == 1 && c.getPath().toArray()[0].equalsIgnoreCase(column)) chunk = c;
            }
            if (chunk == null) return FileBounds.unknown(path);
            Statistics<?> st = chunk.getStatistics();
            if (st == null || st.isEmpty()) return FileBounds.unknown(path);
            nulls |= st.getNumNulls() != 0;  // a NULL, or an unknown count of them
            if (!st.hasNonNullValue()) continue;  // NULLs only
            if (!(st.genericGetMin() instanceof Number min) || !(st.genericGetMax() instanceof Number max)) {
                return FileBounds.unknown(path);
            }
            ranges.add(new long[] {min.longValue(), max.longValue()});
        }
        long[] mins = new long[ranges.size()];
        long[] maxs = new long[ranges.size()];
        for (int i = 0; i < mins.length; i++) {
            mins[i] = ranges.get(i)[0];
            maxs[i] = ranges.get(i)[1];
        }
        return new FileBounds(path, mins, maxs, nulls);
    }
}
