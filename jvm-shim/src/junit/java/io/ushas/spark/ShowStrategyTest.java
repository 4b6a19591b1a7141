package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ShowStrategyTest {
    private static final String HEAD = "CREATE TABLE db.t (\n  a INT,\n  b STRING,\n  dt STRING)\nUSING parquet\n";

    @Test
    void sortedBucketsWithPartitionsBecomeClusteredBy() {
        assertEquals(HEAD + "PARTITIONED BY (dt)\nCLUSTERED BY (a)\nSORTED BY (b)\nINTO 4 BUCKETS\nCOMMENT 'c'\n",
                ShowStrategy.clustered(HEAD + "PARTITIONED BY (dt, sorted_bucket(a, 4, b))\nCOMMENT 'c'\n"));
    }

    @Test
    void bucketsOfSeveralColumnsWithoutSortOrPartitions() {
        assertEquals(HEAD + "CLUSTERED BY (a, `b,c`)\nINTO 3 BUCKETS\n",
                ShowStrategy.clustered(HEAD + "PARTITIONED BY (bucket(3, a, `b,c`))\n"));
        assertEquals(HEAD + "CLUSTERED BY (a, b)\nSORTED BY (dt, b)\nINTO 2 BUCKETS\n",
                ShowStrategy.clustered(HEAD + "PARTITIONED BY (sorted_bucket(a, b, 2, dt, b))\n"));
    }

    @Test
    void otherTextStaysAsSparkWroteIt() {
        String plain = HEAD + "PARTITIONED BY (dt)\nTBLPROPERTIES (\n  'k' = 'bucket(2, a)')\n";
        assertEquals(plain, ShowStrategy.clustered(plain));
        assertEquals(HEAD, ShowStrategy.clustered(HEAD));
    }
}
