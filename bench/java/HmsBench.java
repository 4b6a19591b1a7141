import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * The Hive metastore side of bench/postgres.py --hms: the operations through Hive's own Thrift
 * client (HiveMetaStoreClient, Hive 2.3 from pyspark's jars), timed in this JVM, one line per result
 * ("RESULT name seconds") on stdout. Arguments: thrift URI, warehouse URI, partitions of the listed and
 * dropped table, the day the filter selects.
 *
 * The same operations, in the same order, as the ushas side (bench/postgres.py, hms_ushas): create a
 * partitioned table (median of 20), getTable (median of 200), add_partitions(1,000) (median of 5, each on a
 * fresh table), fill a table with N partitions (batches of 5,000), getPartitionsByFilter of one day
 * (median of 20), dropTable of that table.
 *
 * A fifth argument splits the run for a table filled with SQL (bench/postgres.py --hms --sql-fill): "seed"
 * creates the big table and adds its first N partitions through the API ("add N partitions"); "measure"
 * checks that the table has exactly N partitions (listPartitionNames) and that the filtered day's are the
 * right ones (values and locations), then times getPartitionsByFilter (median of 20) and dropTable.
 */
public final class HmsBench {
    static final int SHARDS = 100;
    static final int BATCH = 5000;

    static StorageDescriptor sd(String location, List<FieldSchema> cols) {
        SerDeInfo serde = new SerDeInfo(null, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                new HashMap<>());
        StorageDescriptor sd = new StorageDescriptor();
        sd.setCols(cols);
        sd.setLocation(location);
        sd.setInputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat");
        sd.setOutputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat");
        sd.setSerdeInfo(serde);
        sd.setParameters(new HashMap<>());
        sd.setBucketCols(new ArrayList<>());
        sd.setSortCols(new ArrayList<>());
        sd.setNumBuckets(-1);
        return sd;
    }

    static List<FieldSchema> cols() {
        return Arrays.asList(new FieldSchema("id", "bigint", null), new FieldSchema("payload", "string", null));
    }

    static Table table(String db, String name, String warehouse) {
        Table t = new Table();
        t.setDbName(db);
        t.setTableName(name);
        t.setOwner("bench");
        t.setTableType("MANAGED_TABLE");
        t.setPartitionKeys(Arrays.asList(new FieldSchema("dt", "string", null),
                new FieldSchema("shard", "int", null)));
        t.setSd(sd(warehouse + "/" + db + ".db/" + name, cols()));
        Map<String, String> params = new HashMap<>();
        params.put("EXTERNAL", "FALSE");
        t.setParameters(params);
        return t;
    }

    static String day(int i) {
        return java.time.LocalDate.of(2020, 1, 1).plusDays(i / SHARDS).toString();
    }

    static List<Partition> partitions(Table t, int n, int offset) {
        List<Partition> out = new ArrayList<>(n);
        for (int i = offset; i < offset + n; i++) {
            List<String> values = Arrays.asList(day(i), Integer.toString(i % SHARDS));
            String location = t.getSd().getLocation() + "/dt=" + values.get(0) + "/shard=" + values.get(1);
            out.add(new Partition(values, t.getDbName(), t.getTableName(), 0, 0, sd(location, cols()),
                    new HashMap<>()));
        }
        return out;
    }

    interface Op {
        void run() throws Exception;
    }

    static double timed(Op op) throws Exception {
        long t = System.nanoTime();
        op.run();
        return (System.nanoTime() - t) / 1e9;
    }

    static double median(List<Double> xs) {
        List<Double> s = new ArrayList<>(xs);
        s.sort(null);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    static void result(String name, double seconds) {
        System.out.println("RESULT " + name + " " + seconds);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String uri = args[0];
        String warehouse = args[1];
        int n = Integer.parseInt(args[2]);
        String filterDay = args[3];
        HiveConf conf = new HiveConf();
        conf.setVar(HiveConf.ConfVars.METASTOREURIS, uri);
        conf.setVar(HiveConf.ConfVars.METASTORE_CLIENT_SOCKET_TIMEOUT, "7200s");  // dropTable of 100,000
        HiveMetaStoreClient c = new HiveMetaStoreClient(conf);
        String db = "b";
        String mode = args.length > 4 ? args[4] : "all";
        if (mode.equals("seed")) {
            c.createDatabase(new Database(db, "", warehouse + "/" + db + ".db", new HashMap<>()));
            Table big = table(db, "big", warehouse);
            c.createTable(big);
            result("add " + n + " partitions", timed(() -> c.add_partitions(partitions(big, n, 0))));
            c.close();
            return;
        }
        if (mode.equals("measure")) {
            measure(c, db, n, filterDay);
            c.close();
            return;
        }
        c.createDatabase(new Database(db, "", warehouse + "/" + db + ".db", new HashMap<>()));
        List<Double> xs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Table t = table(db, "c" + i, warehouse);
            xs.add(timed(() -> c.createTable(t)));
        }
        result("create table", median(xs));
        xs.clear();
        for (int i = 0; i < 200; i++) {
            xs.add(timed(() -> c.getTable(db, "c0")));
        }
        result("get_table", median(xs));
        xs.clear();
        for (int i = 0; i < 5; i++) {
            Table t = table(db, "a" + i, warehouse);
            c.createTable(t);
            List<Partition> ps = partitions(t, 1000, 0);
            xs.add(timed(() -> c.add_partitions(ps)));
        }
        result("add 1,000 partitions", median(xs));
        Table big = table(db, "big", warehouse);
        c.createTable(big);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i += BATCH) {
            c.add_partitions(partitions(big, Math.min(BATCH, n - i), i));
        }
        result("fill " + n, (System.nanoTime() - t0) / 1e9);
        byFilterAndDrop(c, db, filterDay);
        c.close();
    }

    static void measure(HiveMetaStoreClient c, String db, int n, String filterDay) throws Exception {
        int total = c.listPartitionNames(db, "big", (short) -1).size();
        System.out.println("TOTAL " + total);
        if (total != n) {
            throw new IllegalStateException("the table has " + total + " partitions, expected " + n);
        }
        for (String d : Arrays.asList(filterDay, day(n - 1))) {   // the last day is one the SQL fill made
            List<Partition> day = c.listPartitionsByFilter(db, "big", "dt = \"" + d + "\"", (short) -1);
            java.util.Set<String> shards = new java.util.HashSet<>();
            for (Partition p : day) {
                String s = p.getValues().get(1);
                if (!p.getValues().get(0).equals(d) || !p.getSd().getLocation().endsWith(
                        "/big/dt=" + d + "/shard=" + s)) {
                    throw new IllegalStateException("wrong partition for " + d + ": " + p.getValues() + " at "
                            + p.getSd().getLocation());
                }
                shards.add(s);
            }
            if (shards.size() != SHARDS || day.size() != SHARDS) {
                throw new IllegalStateException(day.size() + " partitions (" + shards.size() + " shards) for "
                        + d + ", expected " + SHARDS);
            }
            System.out.println("CHECKED " + total + " partitions, " + day.size() + " for " + d);
        }
        System.out.flush();
        byFilterAndDrop(c, db, filterDay);
    }

    static void byFilterAndDrop(HiveMetaStoreClient c, String db, String filterDay) throws Exception {
        List<Double> xs = new ArrayList<>();
        int[] found = new int[1];
        String filter = "dt = \"" + filterDay + "\"";
        for (int i = 0; i < 20; i++) {
            xs.add(timed(() -> found[0] = c.listPartitionsByFilter(db, "big", filter, (short) -1).size()));
        }
        System.out.println("FOUND " + found[0]);
        result("partitions by filter", median(xs));
        System.out.println("DROPPING");
        System.out.flush();
        result("drop table", timed(() -> c.dropTable(db, "big", true, false)));
    }
}
