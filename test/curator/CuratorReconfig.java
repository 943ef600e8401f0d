/*
 * Apache Curator's admin API against corral's ZooKeeper port: read the configuration, add a server
 * as a participant, remove it again, and be refused a stale fromConfig (BADVERSION) and a client
 * without the super user (NOAUTH). Curator's EnsembleTracker (on by default) watches
 * /zookeeper/config and rebuilds the connect string from each member's ';client' address; the
 * program reports what it made of every configuration.
 *
 * Run by test/integration/curator-reconfig.test.ts, compiled there against Debian's jars
 * (libcurator-framework-java, libcurator-client-java, libzookeeper-java):
 *
 *   java CuratorReconfig <connect string> <super password> <joining member line> <joining id>
 *
 * One line per step on stdout, "<step> key=value ...", no spaces inside a value (a configuration's
 * newlines are written as "\n"). After "tracker-joined" it prints "paused" and waits for a line on
 * stdin, so the test can look at the grown cluster before the server is removed. A step that fails
 * in a way the program does not expect prints "failed step=<step> ..." and exits with status 1.
 */

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.EnsembleTracker;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.quorum.QuorumPeer.QuorumServer;
import org.apache.zookeeper.server.quorum.flexible.QuorumMaj;
import org.apache.zookeeper.server.quorum.flexible.QuorumVerifier;

public final class CuratorReconfig {
  /** How long to wait for a connection, and for the EnsembleTracker to see a configuration. */
  private static final long WAIT_MS = 60_000;

  private static String step = "start";

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: CuratorReconfig <connect string> <super password> <joining member line> <joining id>");
      System.exit(2);
    }
    String connect = args[0];
    String password = args[1];
    String joiningLine = args[2];
    String joiningId = args[3];
    try (CuratorFramework admin = client(connect, password);
        CuratorFramework stranger = client(connect, null)) {
      run(admin, stranger, joiningLine, joiningId);
    } catch (Exception e) {
      print("failed", "step", step, "error", describe(e));
      System.exit(1);
    }
    System.exit(0);
  }

  private static void run(CuratorFramework admin, CuratorFramework stranger, String joiningLine, String joiningId) throws Exception {
    step = "connected";
    admin.start();
    stranger.start();
    if (!admin.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) throw new IllegalStateException("admin client not connected");
    if (!stranger.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) throw new IllegalStateException("second client not connected");
    print("connected", "connect", sortedConnect(admin));

    step = "config";
    Stat stat = new Stat();
    byte[] initial = admin.getConfig().storingStatIn(stat).forEnsemble();
    QuorumVerifier initialConfig = parse(initial);
    printConfig("config", initialConfig, stat, initial);

    step = "tracker-initial";
    printTracker("tracker-initial", admin, initialConfig.getVersion());

    step = "joined";
    stat = new Stat();
    byte[] joined = admin.reconfig().joining(joiningLine).storingStatIn(stat).fromConfig(initialConfig.getVersion()).forEnsemble();
    QuorumVerifier joinedConfig = parse(joined);
    printConfig("joined", joinedConfig, stat, joined);

    step = "tracker-joined";
    printTracker("tracker-joined", admin, joinedConfig.getVersion());

    step = "paused";
    print("paused");
    String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    if (line == null) throw new IllegalStateException("stdin closed while paused");

    step = "left";
    stat = new Stat();
    byte[] left = admin.reconfig().leaving(joiningId).storingStatIn(stat).fromConfig(joinedConfig.getVersion()).forEnsemble();
    QuorumVerifier leftConfig = parse(left);
    printConfig("left", leftConfig, stat, left);

    step = "tracker-left";
    printTracker("tracker-left", admin, leftConfig.getVersion());

    // The configuration before the last one: a valid change (one voter of three leaves), from a
    // version no longer in force.
    step = "stale";
    String member = String.valueOf(new TreeSet<>(leftConfig.getVotingMembers().keySet()).first());
    printRefusal("stale", "fromConfig", Long.toHexString(joinedConfig.getVersion()), () -> admin.reconfig().leaving(member).fromConfig(joinedConfig.getVersion()).forEnsemble());

    // Anyone may read the configuration; only the super user may change it.
    step = "stranger-config";
    stat = new Stat();
    byte[] read = stranger.getConfig().storingStatIn(stat).forEnsemble();
    printConfig("stranger-config", parse(read), stat, read);
    step = "noauth";
    printRefusal("noauth", "leaving", member, () -> stranger.reconfig().leaving(member).forEnsemble());

    step = "done";
    print("done");
  }

  private static CuratorFramework client(String connect, String password) {
    CuratorFrameworkFactory.Builder builder =
        CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(20_000)
            .connectionTimeoutMs(15_000)
            .retryPolicy(new RetryNTimes(3, 1_000))
            .ensembleTracker(true);
    if (password != null) builder = builder.authorization("digest", ("super:" + password).getBytes(StandardCharsets.UTF_8));
    return builder.build();
  }

  /** A configuration as Curator's EnsembleTracker parses it (java.util.Properties into QuorumMaj). */
  private static QuorumVerifier parse(byte[] data) throws Exception {
    Properties properties = new Properties();
    properties.load(new ByteArrayInputStream(data));
    return new QuorumMaj(properties);
  }

  private static void printConfig(String name, QuorumVerifier config, Stat stat, byte[] data) throws Exception {
    print(
        name,
        "version", Long.toHexString(config.getVersion()),
        "mzxid", Long.toHexString(stat.getMzxid()),
        "participants", ids(config.getVotingMembers()),
        "observers", ids(config.getObservingMembers()),
        "clients", sorted(EnsembleTracker.configToConnectionString(config)),
        "text", new String(data, StandardCharsets.UTF_8).replace("\\", "\\\\").replace("\n", "\\n"));
  }

  /**
   * Waits (bounded) until the EnsembleTracker has taken a configuration of at least `version`, then
   * prints the version it holds and the connect string Curator now uses; the caller compares.
   */
  private static void printTracker(String name, CuratorFramework client, long version) throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (client.getCurrentConfig().getVersion() < version && System.currentTimeMillis() < deadline) Thread.sleep(20);
    QuorumVerifier current = client.getCurrentConfig();
    print(name, "version", Long.toHexString(current.getVersion()), "participants", ids(current.getVotingMembers()), "connect", sortedConnect(client));
  }

  private interface Call {
    void run() throws Exception;
  }

  /** Runs a call that should be refused and prints how it ended: the KeeperException's code, or "none". */
  private static void printRefusal(String name, String key, String value, Call call) {
    String error;
    try {
      call.run();
      error = "none";
    } catch (Exception e) {
      error = describe(e);
    }
    print(name, key, value, "error", error);
  }

  /** "BADVERSION:BadVersionException" for a KeeperException, the class name (and message) otherwise. */
  private static String describe(Exception e) {
    if (e instanceof KeeperException) {
      KeeperException k = (KeeperException) e;
      return k.code().name() + ":" + k.getClass().getSimpleName();
    }
    return (e.getClass().getName() + ":" + e.getMessage()).replace(' ', '_');
  }

  private static String sortedConnect(CuratorFramework client) {
    return sorted(client.getZookeeperClient().getCurrentConnectionString());
  }

  private static String sorted(String connect) {
    return String.join(",", new TreeSet<>(Arrays.asList(connect.split(","))));
  }

  private static String ids(Map<Long, QuorumServer> members) {
    return new TreeSet<>(members.keySet()).stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  private static void print(String name, String... keyValues) {
    StringBuilder line = new StringBuilder(name);
    for (int i = 0; i + 1 < keyValues.length; i += 2) line.append(' ').append(keyValues[i]).append('=').append(keyValues[i + 1]);
    System.out.println(line);
    System.out.flush();
  }
}
