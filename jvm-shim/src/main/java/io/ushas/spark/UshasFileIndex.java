package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.InterpretedPredicate;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The files of a catalog table, as the catalog says: Spark's V1 file scan (pruning, pushdown,
 * vectorized reads, {@code _metadata}, dynamic partition pruning) reads through this index. Each
 * {@link #listFiles} is one bridge call: Python selects the partitions the partition filters allow
 * (a range read over the ordered partition keys) and answers each one's location and the data files
 * its writes registered; Spark's own predicate is then applied to the answer. Only partitions whose
 * files were never recorded (added with a LOCATION, imported, repaired) are listed, each at its own
 * location; the table root never is. Nothing is cached here: every scan sees the committed state.
 */
final class UshasFileIndex implements FileIndex {
    /** Directories listed at once for partitions without recorded files (an object-store LIST each). */
    private static final int LIST_THREADS = 16;
    private static final long BLOCK_SIZE = 128L << 20;

    private final UshasCatalog catalog;
    private final Identifier ident;
    private final StructType partitionSchema;
    private final Path root;
    private final Configuration hadoopConf;
    private final long defaultSize;
    /** one scan's dynamic partition filters ({@link UshasScanRule}); empty for the shared index */
    private final List<Expression> runtimeFilters;
    private volatile Long size;
    /** the row filter and masks this catalog's user reads the table through (null: none; see
     *  {@link RowPolicies}); {@code policyApplied}: this index belongs to a relation the rule rewrote */
    private final JsonNode policy;
    private final boolean policyApplied;
    /** the table version this index reads (time travel; null: the current one) */
    private final Long asOf;

    UshasFileIndex(UshasCatalog catalog, Identifier ident, StructType partitionSchema, Path root,
                   Configuration hadoopConf, long defaultSize, JsonNode policy, Long asOf) {
        this(catalog, ident, partitionSchema, root, hadoopConf, defaultSize, List.of(), policy, false, asOf);
    }

    private UshasFileIndex(UshasCatalog catalog, Identifier ident, StructType partitionSchema, Path root,
                           Configuration hadoopConf, long defaultSize, List<Expression> runtimeFilters,
                           JsonNode policy, boolean policyApplied, Long asOf) {
        this.asOf = asOf;
        this.policy = policy;
        this.policyApplied = policyApplied;
        this.catalog = catalog;
        this.ident = ident;
        this.partitionSchema = partitionSchema;
        this.root = root;
        this.hadoopConf = hadoopConf;
        this.defaultSize = defaultSize;
        this.runtimeFilters = runtimeFilters;
    }

    /**
     * This index for one scan whose dynamic partition filters (from a join) are {@code filters}: when
     * Spark lists the scan's files, the subqueries have run, and their values go to the catalog with
     * the static filters, so only the partitions the join needs are read from the catalog. Spark still
     * applies the dynamic filters itself afterwards; a filter without values yet prunes nothing here.
     */
    UshasFileIndex withRuntimeFilters(List<Expression> filters) {
        return new UshasFileIndex(catalog, ident, partitionSchema, root, hadoopConf, defaultSize, List.copyOf(filters),
                policy, policyApplied, asOf);
    }

    JsonNode policy() {
        return policy;
    }

    boolean policyApplied() {
        return policyApplied;
    }

    /** This index under a relation {@link RowPolicies} wrapped in the table's filter and masks. */
    UshasFileIndex withPolicyApplied() {
        return new UshasFileIndex(catalog, ident, partitionSchema, root, hadoopConf, defaultSize, runtimeFilters,
                policy, true, asOf);
    }

    String tableName() {
        return catalog.name() + "." + String.join(".", UshasCatalog.toParts(ident));
    }

    @Override
    public scala.collection.immutable.Seq<Path> rootPaths() {
        return CollectionConverters.asScala(List.of(root)).toList();
    }

    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    @Override
    public scala.collection.immutable.Seq<PartitionDirectory> listFiles(
            scala.collection.immutable.Seq<Expression> partitionFilters,
            scala.collection.immutable.Seq<Expression> dataFilters) {
        return CollectionConverters.asScala(list(CollectionConverters.asJava(partitionFilters))).toList();
    }

    private List<PartitionDirectory> list(List<Expression> filters) {
        if (policy != null && !policyApplied) {  // fail closed: never read a policy's table unfiltered
            throw RowPolicies.refused(this, "this session does not apply row filters and column masks; start it "
                    + "with spark.sql.extensions=io.ushas.spark.UshasExtensions");
        }
        ObjectNode r = catalog.request(ident);
        if (asOf != null) r.put("as_of", asOf);
        List<JsonNode> runtime = PartitionFilters.runtimeJson(runtimeFilters);
        JsonNode filter = PartitionFilters.toJson(filters, runtime);
        if (filter != null) r.set("filter", filter);
        JsonNode answer = catalog.call("list_files", r, ident, null);
        InternalRow[] rows = partitionSchema.isEmpty() ? new InternalRow[] {new GenericInternalRow(0)}
                : Rows.fromAnswer(answer, partitionSchema);
        InterpretedPredicate exact = PartitionFilters.predicate(filters, partitionSchema);
        JsonNode locations = answer.get("locations");
        JsonNode files = answer.get("files");
        List<InternalRow> kept = new ArrayList<>();
        List<JsonNode> keptFiles = new ArrayList<>();
        List<String> keptLocations = new ArrayList<>();
        for (int i = 0; i < rows.length; i++) {
            if (!PartitionFilters.keep(exact, rows[i])) continue;
            kept.add(rows[i]);
            keptFiles.add(files.get(i));
            keptLocations.add(locations.get(i).isNull() ? null : locations.get(i).asText());
        }
        List<List<FileStatusWithMetadata>> statuses = statuses(keptFiles, keptLocations);
        List<PartitionDirectory> out = new ArrayList<>(kept.size());
        for (int i = 0; i < kept.size(); i++) {
            out.add(new PartitionDirectory(kept.get(i), CollectionConverters.asScala(statuses.get(i)).toList()));
        }
        return out;
    }

    /** Recorded files as they are; the others listed, in parallel, at their partition's location. */
    private List<List<FileStatusWithMetadata>> statuses(List<JsonNode> files, List<String> locations) {
        List<List<FileStatusWithMetadata>> out = new ArrayList<>(files.size());
        List<Integer> unlisted = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            JsonNode f = files.get(i);
            if (f == null || f.isNull()) {
                out.add(null);
                unlisted.add(i);
                continue;
            }
            List<FileStatusWithMetadata> statuses = new ArrayList<>(f.size());
            for (JsonNode file : f) {
                FileStatus s = new FileStatus(file.get(1).asLong(), false, 1, BLOCK_SIZE, file.get(2).asLong(),
                        new Path(file.get(0).asText()));
                statuses.add(new FileStatusWithMetadata(s, scala.collection.immutable.Map$.MODULE$.empty()));
            }
            out.add(statuses);
        }
        if (unlisted.size() == 1) {
            int i = unlisted.get(0);
            out.set(i, listDirectory(locations.get(i)));
        } else if (!unlisted.isEmpty()) {
            ExecutorService pool = Executors.newFixedThreadPool(Math.min(LIST_THREADS, unlisted.size()), r -> {
                Thread t = new Thread(r, "ushas-list-files");
                t.setDaemon(true);
                return t;
            });
            try {
                List<Future<List<FileStatusWithMetadata>>> futures = new ArrayList<>();
                for (int i : unlisted) {
                    String location = locations.get(i);
                    futures.add(pool.submit(() -> listDirectory(location)));
                }
                for (int k = 0; k < unlisted.size(); k++) out.set(unlisted.get(k), futures.get(k).get());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new Errors.UshasBridgeException("Ushas catalog: listing " + ident + " was interrupted", e);
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException re) throw re;
                throw new Errors.UshasBridgeException("Ushas catalog: listing a partition of " + ident + " failed: "
                        + cause, cause);
            } finally {
                pool.shutdownNow();
            }
        }
        // the writes into this table that have not committed: the listings skip the files they create at their
        // final names (DirectCommitProtocol). One listing of the table's staging directory, AFTER the
        // partitions': a write's staging directory exists before its first file and goes only after it ended
        java.util.Set<String> running = unlisted.isEmpty() ? java.util.Set.of() : running();
        if (!running.isEmpty()) {
            for (int i : unlisted) {
                List<FileStatusWithMetadata> kept = new ArrayList<>();
                for (FileStatusWithMetadata f : out.get(i)) {
                    if (!DataFileNames.ofRunningWrite(f.getPath().getName(), running)) kept.add(f);
                }
                out.set(i, kept);
            }
        }
        return out;
    }

    /** The data files under one partition directory (recursively; hidden names skipped, as Spark
     *  does); a missing directory has none. */
    private java.util.Set<String> running() {
        try {
            return Staging.running(root.getFileSystem(hadoopConf), root);
        } catch (IOException e) {
            return java.util.Set.of();
        }
    }

    private List<FileStatusWithMetadata> listDirectory(String location) {
        List<FileStatusWithMetadata> out = new ArrayList<>();
        if (location == null) return out;
        Path dir = new Path(location);
        try {
            FileSystem fs = dir.getFileSystem(hadoopConf);
            collect(fs, dir, out);
        } catch (FileNotFoundException e) {
            return out;
        } catch (IOException e) {
            throw new Errors.UshasBridgeException("Ushas catalog: cannot list " + dir + " (a partition of " + ident
                    + "): " + e.getMessage(), e);
        }
        return out;
    }

    private static void collect(FileSystem fs, Path dir, List<FileStatusWithMetadata> out) throws IOException {
        for (FileStatus s : fs.listStatus(dir)) {
            String name = s.getPath().getName();
            if (DataFileNames.hidden(name)) continue;
            if (s.isDirectory()) {
                collect(fs, s.getPath(), out);
            } else {
                out.add(new FileStatusWithMetadata(s, scala.collection.immutable.Map$.MODULE$.empty()));
            }
        }
    }

    @Override
    public String[] inputFiles() {
        List<String> out = new ArrayList<>();
        for (PartitionDirectory p : list(List.of())) {
            for (FileStatusWithMetadata f : CollectionConverters.asJava(p.files())) out.add(f.getPath().toString());
        }
        return out.toArray(new String[0]);
    }

    /** Nothing is cached here: every listing asks the catalog. */
    @Override
    public void refresh() {
    }

    /** The bytes the catalog recorded for the table (asked once per index), else Spark's default. */
    @Override
    public long sizeInBytes() {
        Long s = size;
        if (s == null) {
            ObjectNode r = catalog.request(ident);
            if (asOf != null) r.put("as_of", asOf);
            JsonNode bytes = catalog.call("table_size", r, ident, null).get("bytes");
            s = bytes == null || bytes.isNull() ? defaultSize : bytes.asLong();
            size = s;
        }
        return s;
    }

    @Override
    public String toString() {
        return "UshasFileIndex(" + catalog.name() + "." + String.join(".", UshasCatalog.toParts(ident)) + ", " + root
                + (asOf == null ? "" : ", version " + asOf) + ")";
    }
}
