// SPDX-License-Identifier: Apache-2.0
// A Java workload with known hot methods for the JVM test (tests/integration/test_jvm.py): Hot.mix,
// called by Hot.work, called by Hot.main. Usage: java -cp DIR Hot [SECONDS] (default 60).
public class Hot {
    static long sink;

    static long mix(long x) {
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long work(int n) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s += mix(i);
        return s;
    }

    public static void main(String[] args) {
        long end = System.currentTimeMillis() + 1000L * (args.length > 0 ? Integer.parseInt(args[0]) : 60);
        while (System.currentTimeMillis() < end)
            sink += work(1000);
    }
}
