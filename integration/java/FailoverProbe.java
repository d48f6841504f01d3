// Measures client failover: for each line read on stdin, calls getYarnClusterMetrics
// through Hadoop's own YarnClient (which fails over across yarn.resourcemanager.ha.rm-ids
// as Hadoop's RMProxy does: on connection errors and StandbyException, pausing between
// attempts) and prints "ok" when the call returned, or "error <exception>" when it gave up.
// Prints "ready" once the client has made one successful call.
//
// Usage: FailoverProbe   (reads yarn-site.xml from the classpath's configuration dir)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

public final class FailoverProbe {
    private FailoverProbe() {}

    public static void main(String[] args) throws Exception {
        YarnClient client = YarnClient.createYarnClient();
        client.init(new YarnConfiguration());
        client.start();
        try {
            client.getYarnClusterMetrics();
            System.out.println("ready");
            System.out.flush();
            BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                try {
                    client.getYarnClusterMetrics();
                    System.out.println("ok");
                } catch (Exception e) {
                    System.out.println("error " + e.toString().replace('\n', ' '));
                }
                System.out.flush();
            }
        } finally {
            client.stop();
        }
    }
}
