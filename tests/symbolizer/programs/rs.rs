// SPDX-License-Identifier: Apache-2.0
// Rust test program for the symbolizer: a method in a module (a path of several segments, mangled
// in the legacy or v0 scheme) and a caller. Prints their addresses, then waits to be killed.
use std::io::Write;

mod shapes {
    pub struct Grid {
        pub n: u64,
    }

    impl Grid {
        #[inline(never)]
        pub fn spin(&self, x: u64) -> u64 { // @RSPIN
            let mut acc = x;
            for i in 0..self.n {
                acc = acc.wrapping_mul(31).wrapping_add(i ^ x);
            }
            acc
        }
    }
}

#[inline(never)]
fn hot(g: &shapes::Grid) -> u64 { // @RHOT
    g.spin(7) + 1
}

fn main() {
    let g = shapes::Grid { n: std::env::args().count() as u64 * 1000 };
    let spin: fn(&shapes::Grid, u64) -> u64 = shapes::Grid::spin;
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "spin {:#x}", spin as usize).unwrap();
    writeln!(out, "hot {:#x}", hot as fn(&shapes::Grid) -> u64 as usize).unwrap();
    writeln!(out, "result {}", hot(&g)).unwrap();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    drop(out);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
