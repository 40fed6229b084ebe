// Runs many mqadmin commands in one JVM (a JVM start per command costs about 5 s here):
// reads command lines (words separated by spaces; "#" starts a comment line) from the file named
// by its first argument, runs each through RocketMQ's MQAdminStartup.main0 exactly as
// mqadmin.sh would, and writes what it printed to <out dir>/<line number>.out.
// Usage: java -cp <tools class path>:. MqadminRunner <commands file> <out dir>

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

public class MqadminRunner {
  public static void main(String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Path.of(args[0]));
    Path out = Path.of(args[1]);
    Files.createDirectories(out);
    PrintStream console = System.out;
    int n = 0;
    for (String line : lines) {
      n++;
      String cmd = line.trim();
      if (cmd.isEmpty() || cmd.startsWith("#")) continue;
      ByteArrayOutputStream buffer = new ByteArrayOutputStream();
      PrintStream capture = new PrintStream(buffer, true, StandardCharsets.UTF_8);
      System.setOut(capture);
      System.setErr(capture);
      try {
        MQAdminStartup.main0(cmd.split(" +"), null);
      } catch (Throwable t) {
        capture.println("RUNNER-EXCEPTION " + t);
      }
      capture.flush();
      System.setOut(console);
      Files.write(out.resolve(String.format("%03d.out", n)), buffer.toByteArray());
      console.println("ran " + n + ": " + cmd);
    }
  }
}
