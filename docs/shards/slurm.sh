#!/usr/bin/env bash
# grade-class.sh: a class graded as a Slurm job array of 8 parts, then merged by a job that starts once
# every part has ended. Submit it once, from a login node: sbatch grade-class.sh
#
# The submissions and the results are on a file system every node mounts, at the same path on each
# (SUBMISSIONS, RESULTS); task K writes the part $RESULTS/part-K, the merge $RESULTS/class. Each node
# keeps its own build cache on local disk (PI_COURSE_CACHE), warmed by its first grade. A task that is
# run again resumes its part.
#SBATCH --job-name=grade-class
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=02:00:00
#SBATCH --output=grade-class-%A-%a.log
set -euo pipefail

SUBMISSIONS=${SUBMISSIONS:-$HOME/course/submissions}
RESULTS=${RESULTS:-$HOME/course/results}
SEED=${SEED:-20260901}
# K counts from 0, as --array=0-7 does; N is the number of tasks in the array.
K=$SLURM_ARRAY_TASK_ID
N=${SLURM_ARRAY_TASK_COUNT:-8}
export PI_COURSE_CACHE=${PI_COURSE_CACHE:-/tmp/$USER-pi-course-cache}
mkdir -p "$PI_COURSE_CACHE" "$RESULTS"

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
