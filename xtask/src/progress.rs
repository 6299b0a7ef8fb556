//! Progress: a bar on a terminal, plain lines otherwise.

use std::io::IsTerminal;

pub enum Progress {
    Bar(indicatif::ProgressBar),
    Lines { total: usize, done: usize },
}

impl Progress {
    pub fn new(total: usize) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} eta {eta} {msg}")
            {
                bar.set_style(style);
            }
            Progress::Bar(bar)
        } else {
            Progress::Lines { total, done: 0 }
        }
    }

    pub fn start(&mut self, name: &str) {
        match self {
            Progress::Bar(bar) => bar.set_message(name.to_owned()),
            Progress::Lines { total, done } => eprintln!("sweep: [{}/{}] {name}", *done + 1, total),
        }
    }

    pub fn finish_run(&mut self, line: &str) {
        match self {
            Progress::Bar(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            Progress::Lines { done, .. } => {
                *done += 1;
                eprintln!("sweep:   {line}");
            }
        }
    }

    pub fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
