#!/usr/bin/env bash
# grade-class.sh: a class graded as a Slurm job array of 8 parts, then merged by a job that starts once
# every part has ended. Submit it once, from a login node: sbatch grade-class.sh
#
# The submissions and the results are on a file system every node mounts, at the same path on each
# (SUBMISSIONS, RESULTS); task K writes the part $RESULTS/part-K, the merge $RESULTS/class. Each node
# keeps its own build cache on local disk (PI_COURSE_CACHE), warmed by its first grade. A task that is
# run again resumes its part.
#
# The class's seed is a secret: whoever knows it can compute every learner's expected traces with
# `pi-course grade --seed`. The first task to start draws it at random into $RESULTS/.class-seed, a file
# only you can read; every other task (and a task run again) reads it from there, and nothing prints it.
# Remove that file once the class is merged. (SEED in the environment replays a class graded before,
# from your own records.)
#SBATCH --job-name=grade-class
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=02:00:00
#SBATCH --output=grade-class-%A-%a.log
set -euo pipefail

SUBMISSIONS=${SUBMISSIONS:-$HOME/course/submissions}
RESULTS=${RESULTS:-$HOME/course/results}
# K counts from 0, as --array=0-7 does; N is the number of tasks in the array.
K=$SLURM_ARRAY_TASK_ID
N=${SLURM_ARRAY_TASK_COUNT:-8}
export PI_COURSE_CACHE=${PI_COURSE_CACHE:-/tmp/$USER-pi-course-cache}
mkdir -p "$PI_COURSE_CACHE" "$RESULTS"

if [ -z "${SEED:-}" ]; then
  SEED_FILE=$RESULTS/.class-seed
  if [ ! -s "$SEED_FILE" ]; then
    drawn=$(mktemp "$RESULTS/.class-seed.XXXXXX") # mode 600
    od -An -N8 -tu8 /dev/urandom | tr -d ' \n' > "$drawn"
    # A link is made whole or not at all: the first task's seed wins, and every task reads that one.
    ln "$drawn" "$SEED_FILE" 2> /dev/null || true
    rm -f "$drawn"
  fi
  SEED=$(cat "$SEED_FILE")
fi

# The first task submits the merge, once, to run after every task of this array has ended (afterany:
# also when one failed, so that merge-class says which part is missing).
if [ "$K" = 0 ] && mkdir "$RESULTS/.merge-submitted" 2> /dev/null; then
  sbatch --job-name=merge-class --dependency="afterany:$SLURM_ARRAY_JOB_ID" --time=00:30:00 \
    --output="merge-class-%j.log" \
    --wrap="pi-course merge-class '$RESULTS'/part-*/ --out '$RESULTS/class' || [ \$? -eq 1 ]"
fi

# Exit status 1 (some entry could not be graded) still wrote the part; 2 (bad input) fails the task.
pi-course grade-class "$SUBMISSIONS" --out "$RESULTS/part-$K" --shard "$K/$N" --seed "$SEED" \
  --sandbox require --lang en --jobs "${SLURM_CPUS_PER_TASK:-2}" || [ $? -eq 1 ]
