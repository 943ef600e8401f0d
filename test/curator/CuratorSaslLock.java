// Apache Curator over SASL DIGEST-MD5 (test/integration/curator-sasl.test.ts): two Curator clients
// log in with the JAAS Client section given by -Djava.security.auth.login.config, then run an
// InterProcessMutex whose nodes carry the user's sasl ACL. Arguments: connect string, the user,
// the lock path. One line per step on stdout:
//   whoami <scheme>:<user>,...       what the server says the first client is
//   acquired-a true                  the first client holds the lock
//   acquired-b-while-held false      the second one cannot take it within a second
//   acquired-b true                  ... and takes it once the first released it
//   acl <perms>:<scheme>:<id>,...    the lock path's ACL
//   done
// or "failed <exception>" and exit code 1.
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class CuratorSaslLock {
    public static void main(String[] args) {
        try {
            run(args[0], args[1], args[2]);
            System.out.println("done");
            System.exit(0);
        } catch (Exception e) {
            System.out.println("failed " + e.toString().replace('\n', ' '));
            e.printStackTrace();
            System.exit(1);
        }
    }

    static CuratorFramework client(String connect, String user) throws InterruptedException {
        // Not List.of: ZooKeeper's validateACL asks the list whether it contains null.
        List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", user)));
        ACLProvider provider = new ACLProvider() {
            public List<ACL> getDefaultAcl() {
                return acl;
            }

            public List<ACL> getAclForPath(String path) {
                return acl;
            }
        };
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .retryPolicy(new RetryNTimes(3, 500))
            .sessionTimeoutMs(10_000)
            .aclProvider(provider)
            .build();
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        return client;
    }

    static void run(String connect, String user, String path) throws Exception {
        try (CuratorFramework a = client(connect, user); CuratorFramework b = client(connect, user)) {
            List<ClientInfo> who = a.getZookeeperClient().getZooKeeper().whoAmI();
            System.out.println("whoami " + who.stream().map(c -> c.getAuthScheme() + ":" + c.getUser()).sorted().collect(Collectors.joining(",")));
            InterProcessMutex first = new InterProcessMutex(a, path);
            InterProcessMutex second = new InterProcessMutex(b, path);
            System.out.println("acquired-a " + first.acquire(30, TimeUnit.SECONDS));
            System.out.println("acquired-b-while-held " + second.acquire(1, TimeUnit.SECONDS));
            first.release();
            System.out.println("acquired-b " + second.acquire(30, TimeUnit.SECONDS));
            second.release();
            List<ACL> acl = a.getACL().forPath(path);
            System.out.println("acl " + acl.stream().map(e -> e.getPerms() + ":" + e.getId().getScheme() + ":" + e.getId().getId()).collect(Collectors.joining(",")));
        }
    }
}
