package io.ushas.spark;

import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Whether a catalog's options are the deployer's (docs/governance.md, "Catalog options are the
 * deployer's"). Spark gives a catalog plugin its options from the session's SQL configuration, which any
 * session may change ({@code SET}, {@code spark.conf.set}, Spark Connect session configs); the
 * application's configuration ({@code --conf}, {@code spark-defaults.conf}, the builder's options when it
 * made the SparkContext) is the SparkContext's {@link SparkConf}, which a session cannot change. A catalog
 * whose name ({@code spark.sql.catalog.<name>}) or any option ({@code spark.sql.catalog.<name>.*}) differs
 * between the two was (re)defined at run time: it is refused, before the Python bridge is reached (its
 * {@code python} option names what would be launched), unless the application's configuration sets
 * {@code spark.ushas.session.catalogs=allow}. This is the one place of the rule.
 */
final class DeployedOptions {
    private DeployedOptions() {}

    /** The application setting that lets sessions define and re-point ushas catalogs ({@code allow}). */
    static final String SETTING = "spark.ushas.session.catalogs";
    /** The error class of the refusal (SQLSTATE 46110, Spark's "cannot modify static config"). */
    static final String ERROR_CLASS = "USHAS_SessionCatalogOptions";
    static final String SQL_STATE = "46110";

    /** Throws the refusal when catalog {@code name}'s settings in {@code session} are not the
     * application's and the application did not allow session-defined catalogs. */
    static void check(String name, SparkSession session) {
        SparkConf app = session.sparkContext().getConf();
        if ("allow".equalsIgnoreCase(app.get(SETTING, "").trim())) return;
        String prefix = "spark.sql.catalog." + name;
        Map<String, String> deployed = settings(prefix, app.getAll());
        Map<String, String> current = new TreeMap<>();
        for (Map.Entry<String, String> e : CollectionConverters.asJava(session.conf().getAll()).entrySet()) {
            if (mine(prefix, e.getKey())) current.put(e.getKey(), e.getValue());
        }
        TreeSet<String> changed = new TreeSet<>();
        for (Map.Entry<String, String> e : current.entrySet()) {
            if (!e.getValue().equals(deployed.get(e.getKey()))) changed.add(e.getKey());
        }
        for (String k : deployed.keySet()) {
            if (!current.containsKey(k)) changed.add(k);
        }
        if (changed.isEmpty()) return;
        String message = "catalog " + name + " cannot be initialized: " + String.join(", ", changed)
                + (changed.size() == 1 ? " was" : " were") + " set in this session (SET, spark.conf.set or a Spark"
                + " Connect session config), not in the application's configuration; ushas catalog options are"
                + " the deployer's (set them with --conf or in spark-defaults.conf, or set " + SETTING
                + "=allow there to let sessions define catalogs)";
        throw Errors.sneak(Errors.analysis(ERROR_CLASS, message, null, SQL_STATE));
    }

    private static Map<String, String> settings(String prefix, Tuple2<String, String>[] all) {
        Map<String, String> out = new TreeMap<>();
        for (Tuple2<String, String> kv : all) {
            if (mine(prefix, kv._1())) out.put(kv._1(), kv._2());
        }
        return out;
    }

    private static boolean mine(String prefix, String key) {
        return key.equals(prefix) || key.startsWith(prefix + ".");
    }
}
