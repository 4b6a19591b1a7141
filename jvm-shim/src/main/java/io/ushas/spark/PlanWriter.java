package io.ushas.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

import io.ushas.spark.plan.PlanJson;

/**
 * Static entry points of the plan walker (format: docs/plan-json.md). Used by {@code df.lineage()}
 * through Py4J and reusable from a QueryExecutionListener.
 *
 * <p>Transport: Py4J answers of more than ~8 k characters stall ~44 ms (SPARK-4.3-FACTS.md), so
 * {@link #export} returns small plans inline and writes larger ones to a private temp file whose
 * path it returns; the Python reader deletes it.
 */
public final class PlanWriter {
    /** Inline answers up to this many characters; larger ones go through a temp file. */
    public static final int DEFAULT_INLINE_LIMIT = 7000;

    private PlanWriter() {}

    /** The plan JSON of an analyzed plan. */
    public static String toJson(LogicalPlan plan) {
        return PlanJson.write(plan);
    }

    /** The JSON itself (starts with '{') when at most {@code inlineLimit} chars, else the path
     * of a temp file (mode 600) holding it in UTF-8, which the caller must delete. */
    public static String export(LogicalPlan plan, int inlineLimit) throws IOException {
        String json = PlanJson.write(plan);
        if (json.length() <= inlineLimit) {
            return json;
        }
        Path file = Files.createTempFile("ushas-plan-", ".json",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(file, json.getBytes(StandardCharsets.UTF_8));
        return file.toString();
    }

    public static String export(LogicalPlan plan) throws IOException {
        return export(plan, DEFAULT_INLINE_LIMIT);
    }

    /** Nanoseconds one serialization of {@code plan} takes in the JVM (benchmarks: separates the
     * walk from the transport). */
    public static long walkNanos(LogicalPlan plan) {
        long start = System.nanoTime();
        String json = PlanJson.write(plan);
        long elapsed = System.nanoTime() - start;
        return json.isEmpty() ? -1 : elapsed;
    }

    /** The plan format version this jar writes. */
    public static int formatVersion() {
        return PlanJson.VERSION;
    }
}
