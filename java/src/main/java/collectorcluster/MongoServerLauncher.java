package collectorcluster;

import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.netty.channel.Channel;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

import sun.misc.Signal;

/**
 * Starts mongo-java-server for collector-cluster's embedded database, tests
 * and local runs: on disk in an H2 MVStore file with --db-file, else in
 * memory.
 *
 * Usage: java -jar mongo-server-launcher.jar [--host 127.0.0.1] [--port N] [--db-file FILE] [--watch-stdin]
 *
 * Prints exactly one line, "listening HOST:PORT", once the socket is bound.
 * On SIGTERM or SIGINT the clients are closed, then the H2 store is
 * committed and closed, before exit.
 * Exits with status 0 on SIGTERM or SIGINT. With --watch-stdin it also exits
 * when stdin reaches EOF, so a parent that dies (even by SIGKILL) never
 * leaves an orphan behind: its end of the pipe closes with it.
 */
public final class MongoServerLauncher {

  /**
   * The backend's default version reports wire version 7 (MongoDB 4.0);
   * MongoDB driver 7 refuses servers below wire version 8. Wire 17 is
   * MongoDB 6.0.
   */
  static final class Mongo60 implements MongoVersion {
    @Override
    public List<Integer> getVersionArray() {
      return List.of(6, 0, 0);
    }

    @Override
    public int getWireVersion() {
      return 17;
    }
  }

  /**
   * The backends answer only the legacy isMaster; MongoDB 5.0+ tools and
   * health checks send hello, which is the same reply plus
   * isWritablePrimary. Both backends ask here.
   */
  static boolean isHello(String command) {
    return "hello".equalsIgnoreCase(command);
  }

  static Document helloReply(Document isMasterReply) {
    isMasterReply.put("isWritablePrimary", Boolean.TRUE);
    return isMasterReply;
  }

  /**
   * mongo-java-server's backends are not safe when a command that changes
   * the structure of a database (a collection or an index created or
   * dropped) runs at the same time as other commands on it: an insert
   * racing createIndexes on a fresh database failed with "Unknown error:
   * null" in about 1 of 100 tries here, and once left the collection failing
   * every later query (upstream issue bwaldvogel/mongo-java-server#195 is
   * the same race, createIndexes against itself). Two collector workers
   * starting together, or a killed master's workers still writing while the
   * next run's workers start, do exactly that. So those commands run alone:
   * they take this lock exclusively, every other command takes it shared
   * (commands still run concurrently with one another, as before).
   */
  static final class StructureLock {
    private static final Set<String> STRUCTURAL = Set.of(
        "create", "createindexes", "drop", "dropindexes", "deleteindexes", "dropdatabase", "renamecollection", "collmod");
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    Document run(String command, Supplier<Document> body) {
      ReentrantReadWriteLock.ReadLock shared = lock.readLock();
      ReentrantReadWriteLock.WriteLock alone = lock.writeLock();
      boolean structural = command != null && STRUCTURAL.contains(command.toLowerCase(java.util.Locale.ROOT));
      if (structural) alone.lock(); else shared.lock();
      try {
        return body.get();
      } finally {
        if (structural) alone.unlock(); else shared.unlock();
      }
    }
  }

  /**
   * The in-memory backend keeps every document in the Java heap. Near its
   * end the JVM spends its time collecting, every write stalls for seconds
   * and then connections break on OutOfMemoryError (measured: a collector
   * offered 40,000 syslog lines/s had a flush take 23 s, then none finish
   * for minutes, each worker only saying the database was slow). So writes
   * that add data are refused, with one message that says why and what to
   * do, once the old generation still holds more than FULL of its maximum
   * after a collection; reads, deletes and drops still run (a retention
   * pass can make room). The figure is the JVM's own after its last full
   * collection; one is asked for again, at most every RECHECK_NANOS, after
   * something was deleted, so that writes resume once room is made.
   */
  static final class HeapGuard {
    static final double FULL = 0.85;
    static final long RECHECK_NANOS = 2_000_000_000L;
    static final long RECHECK_UNFREED_NANOS = 30_000_000_000L;
    static final int EXCEEDED_MEMORY_LIMIT = 146; // MongoDB's code for it
    private static final Set<String> ADDS = Set.of("insert", "update", "findandmodify", "create", "createindexes");
    private static final Set<String> FREES = Set.of("delete", "drop", "dropdatabase", "dropindexes", "deleteindexes");
    private final MemoryPoolMXBean pool = oldGeneration();
    private volatile boolean freed = false;
    private long checkedAt = System.nanoTime();

    /** The heap pool collections report on with the largest maximum: the old generation (null if none). */
    static MemoryPoolMXBean oldGeneration() {
      MemoryPoolMXBean best = null;
      for (MemoryPoolMXBean candidate : ManagementFactory.getMemoryPoolMXBeans()) {
        if (candidate.getType() != MemoryType.HEAP || !candidate.isCollectionUsageThresholdSupported()) continue;
        long max = candidate.getUsage().getMax();
        if (max > 0 && (best == null || max > best.getUsage().getMax())) best = candidate;
      }
      return best;
    }

    void check(String command) {
      if (pool == null || command == null) return;
      String name = command.toLowerCase(java.util.Locale.ROOT);
      if (FREES.contains(name)) freed = true;
      if (!ADDS.contains(name)) return;
      MemoryUsage after = pool.getCollectionUsage();
      if (after == null || after.getMax() <= 0 || after.getUsed() <= FULL * after.getMax()) return;
      if (recheck()) after = pool.getCollectionUsage();
      if (after.getUsed() <= FULL * after.getMax()) return;
      throw new MongoServerError(EXCEEDED_MEMORY_LIMIT, "ExceededMemoryLimit", String.format(java.util.Locale.ROOT,
          "the embedded database is full: it keeps its data in memory and holds %d MiB of its %d MiB; nothing more is stored until data is deleted"
              + " (--retention or --max-storage), or start it with --db-path DIR (on disk) or a larger Java heap (JAVA_TOOL_OPTIONS=-Xmx8g), or use MongoDB (MONGODB_URI)",
          after.getUsed() >> 20, after.getMax() >> 20));
    }

    // After a delete, a full collection at most every RECHECK_NANOS says
    // whether there is room again; without one, every RECHECK_UNFREED_NANOS:
    // the usage read is the last collection's, and what was live then (a
    // large reply being sent) may be gone, while refused writes allocate too
    // little for the JVM to collect by itself.
    private synchronized boolean recheck() {
      long now = System.nanoTime();
      if (now - checkedAt < (freed ? RECHECK_NANOS : RECHECK_UNFREED_NANOS)) return false;
      freed = false;
      checkedAt = now;
      System.gc();
      return true;
    }
  }

  // guard: the in-memory backend's (HeapGuard), null on disk (its data is not in the heap).
  static Document answer(StructureLock lock, HeapGuard guard, String command, Supplier<Document> isMaster, Supplier<Document> other) {
    if (guard != null) guard.check(command);
    return lock.run(command, () -> isHello(command) ? helloReply(isMaster.get()) : other.get());
  }

  static final class Memory extends MemoryBackend {
    private final StructureLock lock = new StructureLock();
    private final HeapGuard guard = new HeapGuard();

    @Override
    public Document handleCommand(Channel channel, String database, String command, Document query) {
      return answer(lock, guard, command,
          () -> super.handleCommand(channel, database, "isMaster", query),
          () -> super.handleCommand(channel, database, command, query));
    }
  }

  static final class OnDisk extends H2Backend {
    OnDisk(String file) {
      super(file);
    }

    private final StructureLock lock = new StructureLock();

    @Override
    public Document handleCommand(Channel channel, String database, String command, Document query) {
      return answer(lock, null, command,
          () -> super.handleCommand(channel, database, "isMaster", query),
          () -> super.handleCommand(channel, database, command, query));
    }
  }

  private static final class Options {
    String host = "127.0.0.1";
    int port = 0;
    String dbFile = null;
    boolean watchStdin = false;
  }

  private MongoServerLauncher() {
  }

  public static void main(String[] args) {
    Options options;
    try {
      options = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("mongo-server-launcher: " + e.getMessage());
      System.exit(2);
      return;
    }

    OnDisk onDisk;
    AbstractMongoBackend backend;
    try {
      onDisk = options.dbFile == null ? null : new OnDisk(options.dbFile);
      backend = onDisk == null ? new Memory() : onDisk;
    } catch (RuntimeException e) {
      System.err.println("mongo-server-launcher: cannot open " + options.dbFile + ": " + e.getMessage());
      System.exit(1);
      return;
    }
    MongoServer server = new MongoServer(backend.version(new Mongo60()));
    try {
      server.bind(options.host, options.port);
    } catch (Exception e) { // netty rethrows the checked BindException undeclared
      System.err.println("mongo-server-launcher: cannot listen on " + options.host + ":" + options.port + ": " + e.getMessage());
      System.exit(1);
      return;
    }

    // A signal or stdin's EOF only asks for the stop; the main thread does
    // it. Run in the signal's thread (a daemon), the stop raced the JVM's
    // own exit: once netty's event loops (its last non-daemon threads) had
    // ended, the JVM exited before the backend was closed, and writes
    // acknowledged since the last commit were gone from the file (1 stop in
    // 4 to 15 here). The main thread is not a daemon: the JVM waits for it.
    CountDownLatch stopAsked = new CountDownLatch(1);
    Runnable stop = stopAsked::countDown;
    Signal.handle(new Signal("TERM"), signal -> stop.run());
    Signal.handle(new Signal("INT"), signal -> stop.run());
    if (options.watchStdin) {
      watchStdin(stop);
    }

    InetSocketAddress address = server.getLocalAddress();
    System.out.println("listening " + options.host + ":" + address.getPort());
    System.out.flush();

    while (stopAsked.getCount() > 0) {
      try {
        stopAsked.await();
      } catch (InterruptedException ignored) {
        // only the stop ends the wait
      }
    }
    server.shutdownNow(); // closes the clients, then the backend: the H2 store is committed, written and closed
    System.exit(0);
  }

  private static Options parse(String[] args) {
    Options options = new Options();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--host":
          options.host = value(args, ++i, "--host");
          break;
        case "--port":
          options.port = port(value(args, ++i, "--port"));
          break;
        case "--db-file":
          options.dbFile = value(args, ++i, "--db-file");
          break;
        case "--watch-stdin":
          options.watchStdin = true;
          break;
        default:
          throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    return options;
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return args[i];
  }

  private static int port(String text) {
    try {
      int port = Integer.parseInt(text);
      if (port >= 0 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new IllegalArgumentException("--port must be an integer 0-65535, got " + text);
  }

  private static void watchStdin(Runnable stop) {
    Thread watcher = new Thread(() -> {
      byte[] buffer = new byte[256];
      InputStream in = System.in;
      try {
        while (in.read(buffer) >= 0) {
          // input is ignored; only EOF matters
        }
      } catch (IOException ignored) {
        // a broken pipe means the parent is gone too
      }
      stop.run();
    }, "stdin-watcher");
    watcher.setDaemon(true);
    watcher.start();
  }
}
