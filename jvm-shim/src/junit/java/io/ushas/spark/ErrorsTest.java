package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.PartitionsAlreadyExistException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.junit.jupiter.api.Test;

/** The error table the jar carries (errors.json, generated from ushas_catalog.errors) drives Errors.toSpark. */
class ErrorsTest {
    private static final Identifier T = Identifier.of(new String[] {"db"}, "t");

    private static Throwable thrown(String answer, Identifier ident) {
        try {
            return Errors.toSpark(Json.parse(answer), ident, null);
        } catch (Throwable t) {  // Spark's checked exceptions are thrown, not returned
            return t;
        }
    }

    @Test
    void missingTableIsSparksOwn() {
        Throwable t = thrown("{\"type\": \"NoSuchTable\", \"message\": \"m\"}", T);
        assertInstanceOf(NoSuchTableException.class, t);
        assertEquals("TABLE_OR_VIEW_NOT_FOUND", ((SparkThrowable) t).getCondition());
    }

    @Test
    void partitionErrorsCarryPythonsParameters() {
        String params = "\"parameters\": {\"partitionList\": \"PARTITION (`dt` = a)\", \"tableName\": \"`c`.`d`.`t`\"}";
        Throwable missing = thrown("{\"type\": \"NoSuchPartition\", \"message\": \"m\", \"spark\": {\"errorClass\": "
                + "\"PARTITIONS_NOT_FOUND\", " + params + "}}", T);
        assertInstanceOf(NoSuchPartitionsException.class, missing);
        assertTrue(missing.getMessage().contains("PARTITION (`dt` = a) cannot be found in table `c`.`d`.`t`"));
        Throwable exists = thrown("{\"type\": \"PartitionAlreadyExists\", \"message\": \"m\", \"spark\": {\"errorClass\": "
                + "\"PARTITIONS_ALREADY_EXIST\", " + params + "}}", T);
        assertInstanceOf(PartitionsAlreadyExistException.class, exists);
    }

    @Test
    void badInputIsTheCatalogsOwnAnalysisError() {
        Throwable t = thrown("{\"type\": \"InvalidName\", \"message\": \"bad\"}", T);
        assertInstanceOf(AnalysisException.class, t);
        assertEquals("USHAS_InvalidName", ((SparkThrowable) t).getCondition());
        assertEquals("42000", ((SparkThrowable) t).getSqlState());
        assertEquals("[USHAS_InvalidName] bad", t.getMessage());
    }

    @Test
    void storeAndUnknownErrorsAreSystemErrors() {
        for (String type : new String[] {"StoreBusy", "KeySpaceError", "NotInTheTable"}) {
            Throwable t = thrown("{\"type\": \"" + type + "\", \"message\": \"m\"}", T);
            assertInstanceOf(Errors.UshasBridgeException.class, t, type);
            assertEquals("USHAS_" + type, ((SparkThrowable) t).getCondition());
            assertEquals("58000", ((SparkThrowable) t).getSqlState());
        }
    }
}
