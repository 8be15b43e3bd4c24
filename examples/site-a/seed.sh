#!/bin/sh
# Seeds a real slurmdbd with the "current" state of examples/site-a (how state/ was produced):
#   eval "$(scripts/slurm-testbed up /tmp/tb)"; sh examples/site-a/seed.sh; slurmplan dump -o examples/site-a/state
# Every call uses -i and an explicit cluster; SACCTMGR defaults to sacctmgr from PATH.
set -eu
S="${SACCTMGR:-sacctmgr}"
T="timeout 30"
$T "$S" -i add cluster rocket
$T "$S" -i add qos paused,downscaled,gpu_long
$T "$S" -i add account hpc_customers cluster=rocket description=waldur-customers organization=hpc
$T "$S" -i add account hpc_c_tartu cluster=rocket parent=hpc_customers "description=University of Tartu" organization=tartu
$T "$S" -i add account hpc_c_taltech cluster=rocket parent=hpc_customers "description=TalTech" organization=taltech
$T "$S" -i add account hpc_p_genomics,hpc_p_physics cluster=rocket parent=hpc_c_tartu
$T "$S" -i add account hpc_p_robotics cluster=rocket parent=hpc_c_taltech
$T "$S" -i add account hpc_a_genome-2026,hpc_a_assembly cluster=rocket parent=hpc_p_genomics qos=normal,gpu_long defaultqos=normal
# drift: lattice sits under genomics, the desired state has it under physics
$T "$S" -i add account hpc_a_lattice cluster=rocket parent=hpc_p_genomics qos=normal defaultqos=normal
$T "$S" -i add account hpc_a_old,hpc_a_robo cluster=rocket parent=hpc_p_robotics qos=normal defaultqos=normal
$T "$S" -i add account physics_local cluster=rocket "description=Local physics group" organization=physics
$T "$S" -i modify account where name=hpc_a_genome-2026 cluster=rocket set GrpTRESMins=cpu=6000000,mem=1024000 MaxWall=2880
$T "$S" -i add user alice,bob account=hpc_a_genome-2026 cluster=rocket
$T "$S" -i add user bob,carol account=hpc_a_assembly cluster=rocket
# drift: bob's own DefaultQOS on assembly blocks a naive `set qos=paused` on the account
$T "$S" -i modify user where name=bob account=hpc_a_assembly cluster=rocket partition= set defaultqos=normal
$T "$S" -i add user dave account=hpc_a_old cluster=rocket
$T "$S" -i add user dave account=hpc_a_robo cluster=rocket
$T "$S" -i add user frank account=physics_local cluster=rocket
$T "$S" -i add user frank account=hpc_a_lattice cluster=rocket
