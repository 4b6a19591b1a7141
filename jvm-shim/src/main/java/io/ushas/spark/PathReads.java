package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.FileTable;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Governed path reads (docs/governance.md, "External locations"), an analyzer rule of {@link UshasExtensions}
 * ({@link #rule}, the last post-hoc resolution rule): a plan that reads files by path ({@code SELECT … FROM parquet.`path`},
 * {@code spark.read.load(path)}, any file source whose index is not a catalog table's) is sent, paths only, to
 * every configured Ushas catalog of the session whose calls are checked; Python refuses
 * ({@code INSUFFICIENT_PERMISSIONS}) a path that reaches a table's data without SELECT free of row filters and
 * masks, or lies in a declared location without {@code READ FILES}, or in the catalog's managed warehouse. A
 * plan without path reads costs one walk of the plan and no call. Path writes ({@link #collectWrites}) are
 * checked the same way (WRITE FILES on the declared location, no other table's data), in the same call: one
 * {@code check_paths} call per checked catalog and analyzed plan, one transaction and one policy snapshot on the
 * Python side. Nothing is remembered between plans: a grant revoked after one statement bites on the next.
 */
final class PathReads extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    private static final String CATALOG_PREFIX = "spark.sql.catalog.";
    private final SparkSession session;

    PathReads(SparkSession session) {
        this.session = session;
    }

    /** The analyzer rule of {@link UshasExtensions}: the check, the plan unchanged. A post-hoc resolution rule, so
     *  that a refusal reaches the user as thrown ({@code INSUFFICIENT_PERMISSIONS}, SQLSTATE 42501): Spark's
     *  {@code CheckAnalysis} wraps a check rule's {@code AnalysisException} into an {@code
     *  ExtendedAnalysisException} that drops the SQLSTATE. */
    static AbstractFunction1<SparkSession, org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan>> rule() {
        return new AbstractFunction1<>() {
            @Override
            public org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan> apply(SparkSession session) {
                PathReads check = new PathReads(session);
                return new org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan>() {
                    @Override
                    public LogicalPlan apply(LogicalPlan plan) {
                        check.apply(plan);
                        return plan;
                    }
                };
            }
        };
    }

    @Override
    public BoxedUnit apply(LogicalPlan plan) {
        Set<String> paths = new LinkedHashSet<>();
        collect(plan, paths);
        Set<String> written = new LinkedHashSet<>();
        collectWrites(plan, written);
        if (paths.isEmpty() && written.isEmpty()) return BoxedUnit.UNIT;
        Set<UshasCatalog> deployed = new LinkedHashSet<>();
        UshasCatalog procedure = PROCEDURE.get();
        List<UshasCatalog> checking = procedure != null ? List.of(procedure) : checkedCatalogs(deployed);
        if (procedure != null) deployed.add(procedure);  // fails closed
        for (UshasCatalog catalog : checking) {
            try {
                // one call per catalog and plan: its writes and reads in one transaction, one policy snapshot
                boolean writes = !written.isEmpty() && procedure == null;  // a procedure's own writes: paths it chose
                if (!writes && paths.isEmpty()) continue;
                com.fasterxml.jackson.databind.node.ObjectNode r = catalog.request();
                r.set("reads", Json.strings(paths.toArray(new String[0])));
                r.set("writes", Json.strings(writes ? written.toArray(new String[0]) : new String[0]));
                catalog.call("check_paths", r, null, null);
            } catch (Exception e) {  // Spark's AnalysisException is a checked exception Scala throws undeclared
                if (refusal(e) && plan instanceof org.apache.spark.sql.catalyst.streaming.WriteToStream w) {
                    StreamPaths.undo(w);  // the empty directories Spark made before any rule saw the stream
                }
                // a deployed catalog fails closed; a refusal is a refusal. A catalog this session defined at run
                // time that cannot answer any more (its branch dropped, its store or service gone) governs
                // nothing now: skipping it gives the session nothing it could not get by never using it.
                if (deployed.contains(catalog) || refusal(e)) throw e;
                LOG.warn("path check skipped for catalog {} defined at run time: it could not answer ({})",
                         catalog.name(), e.getMessage());
            }
        }
        return BoxedUnit.UNIT;
    }

    /** Set (on the calling thread) while a procedure of this catalog runs the queries it asked the JVM for
     *  (compaction's rewrite into a new directory of the partition): the paths they write are the procedure's,
     *  chosen by the catalog after checking the caller (compaction: MODIFY, no row filter), so they are not
     *  checked again; the paths they read are checked by that catalog alone, as the caller. A Java thread-local,
     *  not a setting a session can reach. */
    static final ThreadLocal<UshasCatalog> PROCEDURE = new ThreadLocal<>();

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PathReads.class);

    /** Whether {@code e} is the check's answer (a refusal), not a catalog unable to check. */
    private static boolean refusal(Exception e) {
        return e instanceof org.apache.spark.SparkThrowable t && "INSUFFICIENT_PERMISSIONS".equals(t.getCondition());
    }

    /** Spark's Hive-format directory write ({@code INSERT OVERWRITE [LOCAL] DIRECTORY … STORED AS textfile},
     *  and parquet / orc when {@code spark.sql.hive.convertMetastoreInsertDir=false}), in spark-hive: named, not
     *  linked, so the shim loads without Hive. */
    private static final String HIVE_DIR = "org.apache.spark.sql.hive.execution.InsertIntoHiveDirCommand";

    /** The paths {@code plan} writes files to outside a catalog table: {@code df.write.parquet(path)} and
     *  {@code df.write.save(path)} (an insert into a file relation of no catalog table, or a save into a data
     *  source with a {@code path} option), {@code INSERT OVERWRITE [LOCAL] DIRECTORY} ({@code USING} or Hive's
     *  {@code STORED AS}) and a started stream's file sink and checkpoint ({@code writeStream…start([path])}). */
    static void collectWrites(LogicalPlan plan, Set<String> out) {
        if (plan instanceof org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand c
                && c.catalogTable().isEmpty()) {
            out.add(c.outputPath().toString());
        } else if (plan instanceof org.apache.spark.sql.execution.command.InsertIntoDataSourceDirCommand d
                && d.storage().locationUri().isDefined()) {
            out.add(d.storage().locationUri().get().toString());
        } else if (HIVE_DIR.equals(plan.getClass().getName())) {
            out.add(hiveDirectory(plan));
        } else if (plan instanceof org.apache.spark.sql.catalyst.streaming.WriteToStream w) {
            StreamPaths.sink(w, out);
        } else if (plan instanceof org.apache.spark.sql.execution.datasources.SaveIntoDataSourceCommand s) {
            scala.collection.Iterator<scala.Tuple2<String, String>> it = s.options().iterator();
            while (it.hasNext()) {
                scala.Tuple2<String, String> e = it.next();
                if ("path".equalsIgnoreCase(e._1())) out.add(e._2());
            }
        }
        scala.collection.Iterator<LogicalPlan> children = plan.children().iterator();
        while (children.hasNext()) collectWrites(children.next(), out);
    }

    /** The directory an {@code InsertIntoHiveDirCommand} writes (fails closed when it cannot be read). */
    private static String hiveDirectory(LogicalPlan plan) {
        try {
            Object storage = plan.getClass().getMethod("storage").invoke(plan);
            scala.Option<?> uri = ((org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) storage).locationUri();
            if (uri.isDefined()) return uri.get().toString();
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IllegalStateException("cannot tell where " + HIVE_DIR + " writes: " + e, e);
        }
        throw new IllegalStateException(HIVE_DIR + " without a directory");
    }

    /** The root paths of every file relation of {@code plan} (its subqueries included) not read through a
     *  catalog table's own index, and the paths of every streaming file source ({@code readStream…load(path)}). */
    static void collect(LogicalPlan plan, Set<String> out) {
        FileIndex index = null;
        if (plan instanceof LogicalRelation lr && lr.relation() instanceof HadoopFsRelation h) {
            index = h.location();
        } else if (plan instanceof DataSourceV2Relation r && r.table() instanceof FileTable t) {
            index = t.fileIndex();
        } else if (plan instanceof org.apache.spark.sql.execution.streaming.runtime.StreamingRelation s) {
            StreamPaths.source(s, out);
        }
        if (index != null && !(index instanceof UshasFileIndex)) {
            scala.collection.Iterator<org.apache.hadoop.fs.Path> roots = index.rootPaths().iterator();
            while (roots.hasNext()) out.add(roots.next().toString());
        }
        scala.collection.Iterator<LogicalPlan> children = plan.children().iterator();
        while (children.hasNext()) collect(children.next(), out);
        scala.collection.Iterator<LogicalPlan> subqueries = plan.subqueries().iterator();
        while (subqueries.hasNext()) collect(subqueries.next(), out);
    }

    /** The Ushas catalogs whose calls are checked: every one the application's configuration declares with
     *  {@code authorization=true} (initialized in this session if it was not: a session cannot avoid the
     *  deployer's catalogs by not using them; one that cannot start refuses the read) and every one this session
     *  initialized already (a catalog a session defines at run time, where
     *  the deployer allows it). {@code deployed} receives the former. */
    private List<UshasCatalog> checkedCatalogs(Set<UshasCatalog> deployed) {
        Set<UshasCatalog> found = new LinkedHashSet<>();
        scala.Tuple2<String, String>[] app = session.sparkContext().getConf().getAll();
        // deployed with authorization=true, or served by an ushas service (remote mode: always checked); lower-case
        Set<String> governed = new java.util.HashSet<>();
        for (scala.Tuple2<String, String> e : app) {
            String key = e._1().toLowerCase(java.util.Locale.ROOT);
            if (!key.startsWith(CATALOG_PREFIX)) continue;
            if (key.endsWith(".authorization") && "true".equalsIgnoreCase(e._2().trim())) {
                governed.add(key.substring(CATALOG_PREFIX.length(), key.length() - ".authorization".length()));
            } else if (key.endsWith(".uri") && RemoteOptions.remote(e._2().trim())) {
                governed.add(key.substring(CATALOG_PREFIX.length(), key.length() - ".uri".length()));
            }
        }
        for (scala.Tuple2<String, String> e : app) {
            String key = e._1();
            if (!key.startsWith(CATALOG_PREFIX) || !UshasCatalog.class.getName().equals(e._2())) continue;
            String name = key.substring(CATALOG_PREFIX.length());
            if (name.contains(".") || !governed.contains(name.toLowerCase(java.util.Locale.ROOT))) continue;
            CatalogPlugin plugin = session.sessionState().catalogManager().catalog(name);  // fails closed
            if (plugin instanceof UshasCatalog u) {
                found.add(u);
                deployed.add(u);
            }
        }
        synchronized (INITIALIZED) {
            List<java.lang.ref.WeakReference<UshasCatalog>> mine = INITIALIZED.get(session);
            if (mine != null) for (java.lang.ref.WeakReference<UshasCatalog> ref : mine) {
                UshasCatalog u = ref.get();
                if (u != null) found.add(u);
            }
        }
        List<UshasCatalog> out = new ArrayList<>();
        for (UshasCatalog u : found) if (u.checked()) out.add(u);
        return out;
    }

    /** The Ushas catalogs each session initialized (weakly held). */
    private static final Map<SparkSession, List<java.lang.ref.WeakReference<UshasCatalog>>> INITIALIZED =
            new java.util.WeakHashMap<>();

    /** {@code catalog} was initialized in {@code session} (its path reads are checked from now on). */
    static void initialized(SparkSession session, UshasCatalog catalog) {
        synchronized (INITIALIZED) {
            INITIALIZED.computeIfAbsent(session, s -> new ArrayList<>()).add(new java.lang.ref.WeakReference<>(catalog));
        }
    }
}
