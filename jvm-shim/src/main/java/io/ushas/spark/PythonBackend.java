package io.ushas.spark;

/**
 * The one callback interface Python implements ({@code ushas_catalog.bridge.Backend}).
 * One Spark call = one {@code call}: a JSON request in, a JSON answer out; errors come back as
 * {@code {"error": {"type": ..., "message": ...}}}.
 */
public interface PythonBackend {
    String call(String op, String json);
}
