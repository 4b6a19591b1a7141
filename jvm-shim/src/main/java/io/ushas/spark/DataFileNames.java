package io.ushas.spark;

/**
 * Which file and directory names under a table are not data: Spark's own rule for file listings
 * ({@code _SUCCESS}, checksums and other dot files, {@code _temporary}, {@code _ushas_staging}, a copy in
 * progress); a {@code _column=value} directory is a partition, so data. One rule for the read path's
 * listings and the write paths' accounting of what a job wrote.
 */
final class DataFileNames {
    private DataFileNames() {}

    static boolean hidden(String name) {
        return (name.startsWith("_") && !name.contains("=")) || name.startsWith(".") || name.endsWith("._COPYING_");
    }

    /** Whether {@code name} is a file of one of the {@code running} writes (their write ids,
     *  {@link Staging#running}): created at its final name by a write that has not committed
     *  ({@link DirectCommitProtocol}), so not data for a listing. */
    static boolean ofRunningWrite(String name, java.util.Set<String> running) {
        if (running.isEmpty()) return false;
        for (String id : running) {
            if (name.contains(id)) return true;
        }
        return false;
    }
}
