package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * MSCK REPAIR TABLE / RECOVER PARTITIONS of an Ushas table. The JVM only lists: the partition
 * directories under the table location (Hadoop FileSystem, any scheme; one level per partition column,
 * each level's directories listed in parallel on a bounded pool; directories named
 * {@code <column>=<value>} for that level's column, names starting with {@code _} or {@code .} skipped)
 * and, for DROP / SYNC, which registered locations no longer exist. Python ({@code ushas_catalog.repair},
 * bridge op {@code repair}) parses the values, decides and registers, in transactions within
 * FoundationDB's limits; the listing goes to it in batches of {@link #BATCH} paths.
 */
final class PartitionRepair {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionRepair.class);
    /** paths (or partitions) per bridge call */
    static final int BATCH = 10_000;
    /** listing threads: {@code spark.ushas.repair.listingThreads} */
    static final String THREADS_CONF = "spark.ushas.repair.listingThreads";
    static final int DEFAULT_THREADS = 16;
    /** invalid directories named in the log (the count is always logged) */
    static final int LOGGED_INVALID = 20;

    /** What a repair did. */
    static final class Result {
        long listed;
        long added;
        long dropped;
        long invalid;
    }

    /** A listed directory: its path relative to the table root (names as on disk) and its Hadoop path. */
    private record Dir(String rel, Path path) {}

    private final UshasCatalog catalog;
    private final Identifier ident;
    private final boolean add;
    private final boolean drop;
    private final String statement;
    private final org.apache.spark.sql.classic.SparkSession session;

    PartitionRepair(org.apache.spark.sql.classic.SparkSession session, UshasCatalog catalog, Identifier ident,
                    boolean add, boolean drop, String statement) {
        this.session = session;
        this.catalog = catalog;
        this.ident = ident;
        this.add = add;
        this.drop = drop;
        this.statement = statement;
    }

    private ObjectNode request(String step) {
        ObjectNode r = catalog.request(ident);
        r.put("step", step);
        return r;
    }

    Result run() {
        Result result = new Result();
        JsonNode start = catalog.call("repair", request("start"), ident, null);
        String location = start.get("location").asText();
        String[] columns = Json.toStrings(start.get("columns"));
        Path root = new Path(location);
        int threads = threads();
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "ushas-repair-list");
            t.setDaemon(true);
            return t;
        });
        try {
            FileSystem fs = root.getFileSystem(catalog.hadoopConf());
            List<Dir> dirs = list(pool, fs, root, columns);
            result.listed = dirs.size();
            if (drop) result.dropped = dropMissing(pool, fs, dirs);
            if (add) addListed(dirs, result);
        } catch (IOException e) {
            throw new UncheckedIOException(statement + " " + quoted() + ": listing " + location + " failed: "
                    + e.getMessage(), e);
        } finally {
            pool.shutdownNow();
        }
        if (result.added > 0 || result.dropped > 0) refresh();
        LOG.info("{} {}: {} partition directories under {}, added {}, dropped {}, {} invalid", statement, quoted(),
                result.listed, location, result.added, result.dropped, result.invalid);
        return result;
    }

    private int threads() {
        String v = (session != null ? session : SparkSession.active()).conf().get(THREADS_CONF,
                String.valueOf(DEFAULT_THREADS));
        try {
            return Math.max(1, Math.min(256, Integer.parseInt(v.trim())));
        } catch (NumberFormatException e) {
            throw Errors.invalidArgument("" + THREADS_CONF + " must be an integer, not "
                    + v);
        }
    }

    // ---- listing -------------------------------------------------------------------------------------
    /** The directories at the depth of the partition columns, level by level, each level in parallel. */
    private static List<Dir> list(ExecutorService pool, FileSystem fs, Path root, String[] columns)
            throws IOException {
        List<Dir> level = List.of(new Dir("", root));
        for (String column : columns) {
            List<Future<List<Dir>>> futures = new ArrayList<>(level.size());
            for (Dir d : level) futures.add(pool.submit(() -> children(fs, d, column)));
            List<Dir> next = new ArrayList<>();
            for (Future<List<Dir>> f : futures) next.addAll(get(f));
            level = next;
        }
        return level;
    }

    private static List<Dir> children(FileSystem fs, Dir dir, String column) throws IOException {
        FileStatus[] statuses;
        try {
            statuses = fs.listStatus(dir.path());
        } catch (FileNotFoundException e) {
            return List.of();  // the root (or a directory removed meanwhile) is not there: nothing below it
        }
        List<Dir> out = new ArrayList<>();
        for (FileStatus s : statuses) {
            if (!s.isDirectory()) continue;
            String name = s.getPath().getName();
            if (name.startsWith("_") || name.startsWith(".")) continue;
            int eq = name.indexOf('=');
            if (eq <= 0 || !ExternalCatalogUtils.unescapePathName(name.substring(0, eq)).equalsIgnoreCase(column)) {
                if (eq > 0) LOG.warn("ignoring {}: expected a directory of partition column {}", s.getPath(), column);
                continue;
            }
            out.add(new Dir(dir.rel().isEmpty() ? name : dir.rel() + "/" + name, s.getPath()));
        }
        return out;
    }

    private static <T> T get(Future<T> f) throws IOException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof IOException io) throw io;
            if (c instanceof RuntimeException re) throw re;
            throw new IOException(c);
        }
    }

    // ---- drop ------------------------------------------------------------------------------------------
    /** Unregisters the partitions whose location is gone: a location under the root that the listing found
     *  exists; any other is checked (in parallel). */
    private long dropMissing(ExecutorService pool, FileSystem fs, List<Dir> dirs) throws IOException {
        JsonNode answer = catalog.call("repair", request("registered"), ident, null);
        String root = answer.get("location").asText();
        Set<String> listed = new HashSet<>(dirs.size() * 2);
        for (Dir d : dirs) listed.add(d.rel());
        List<JsonNode> check = new ArrayList<>();
        for (JsonNode p : answer.get("partitions")) {
            boolean relative = p.get(2).asInt() == 1;
            if (relative && listed.contains(p.get(1).asText())) continue;
            check.add(p);
        }
        List<Future<Boolean>> exists = new ArrayList<>(check.size());
        for (JsonNode p : check) {
            String loc = p.get(2).asInt() == 1 ? root + "/" + p.get(1).asText() : p.get(1).asText();
            exists.add(pool.submit(() -> {
                Path path = new Path(loc);
                return path.getFileSystem(catalog.hadoopConf()).exists(path);
            }));
        }
        List<JsonNode> gone = new ArrayList<>();
        for (int i = 0; i < check.size(); i++) if (!get(exists.get(i))) gone.add(check.get(i).get(0));
        long dropped = 0;
        for (int i = 0; i < gone.size(); i += BATCH) {
            ObjectNode r = request("drop");
            ArrayNode parts = r.putArray("partitions");
            for (JsonNode texts : gone.subList(i, Math.min(gone.size(), i + BATCH))) parts.add(texts);
            dropped += catalog.call("repair", r, ident, null).get("dropped").asLong();
        }
        return dropped;
    }

    // ---- add -------------------------------------------------------------------------------------------
    private void addListed(List<Dir> dirs, Result result) {
        List<String> invalid = new ArrayList<>();
        for (int i = 0; i < dirs.size(); i += BATCH) {
            ObjectNode r = request("add");
            ArrayNode paths = r.putArray("paths");
            for (Dir d : dirs.subList(i, Math.min(dirs.size(), i + BATCH))) paths.add(d.rel());
            JsonNode answer = catalog.call("repair", r, ident, null);
            result.added += answer.get("added").asLong();
            for (JsonNode bad : answer.get("invalid")) {
                result.invalid++;
                if (invalid.size() < LOGGED_INVALID) invalid.add(bad.get(0).asText() + ": " + bad.get(1).asText());
            }
        }
        for (String bad : invalid) LOG.warn("{} {}: not registered: {}", statement, quoted(), bad);
        if (result.invalid > invalid.size()) {
            LOG.warn("{} {}: {} more invalid directories not registered", statement, quoted(),
                    result.invalid - invalid.size());
        }
    }

    // ---- caches ----------------------------------------------------------------------------------------
    /** This session's cached relation and cached data (CACHE TABLE) of the table see the new partitions;
     *  other sessions see the table's new version. Nothing is listed or read here. */
    private void refresh() {
        catalog.invalidateTable(ident);
        if (session == null) return;
        List<String> parts = new ArrayList<>();
        parts.add(catalog.name());
        parts.addAll(List.of(ident.namespace()));
        parts.add(ident.name());
        try {
            session.sharedState().cacheManager().recacheTableOrView(session,
                    scala.jdk.javaapi.CollectionConverters.asScala(parts).toList(), true);
        } catch (RuntimeException e) {
            LOG.warn("{} {}: refreshing the table's cached data failed: {}", statement, quoted(), e.toString());
        }
    }

    private String quoted() {
        List<String> parts = new ArrayList<>();
        parts.add(catalog.name());
        parts.addAll(List.of(ident.namespace()));
        parts.add(ident.name());
        StringBuilder b = new StringBuilder();
        for (String p : parts) {
            if (b.length() > 0) b.append('.');
            b.append('`').append(p.replace("`", "``")).append('`');
        }
        return b.toString();
    }
}
