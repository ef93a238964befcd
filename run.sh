#!/usr/bin/env bash
# The two commands of wbc_control, each installing what it needs first:
#
#   ./run.sh demo [--distro kilted|jazzy] [demo args...]    run the demo (wbc_demo)
#   ./run.sh test [--distro kilted|jazzy] [pytest args...]  run the test suite
#
# The ROS 2 distribution is --distro, else $WBC_ROS_DISTRO, else kilted. Each distribution gets
# its own virtual environment, .venv-<distro>, in the repository root; it is (re)installed only
# when setup.py changed since the last install.
set -euo pipefail

readonly DISTROS='kilted jazzy'
readonly EXTRAS='core,sim,test'

usage() {
    cat <<EOF
usage: ./run.sh demo [--distro kilted|jazzy] [demo args...]
       ./run.sh test [--distro kilted|jazzy] [pytest args...]

The ROS 2 distribution is --distro, else \$WBC_ROS_DISTRO, else kilted.
EOF
}

die() {
    echo "run.sh: $*" >&2
    exit 1
}

# A Python >= 3.10 that can create virtual environments with pip in them.
check_python() {
    command -v python3 >/dev/null || die 'python3 not found: install Python 3.10 or newer'
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
        die "Python 3.10 or newer is needed, python3 is $(python3 -V 2>&1)"
    python3 -c 'import ensurepip, venv' 2>/dev/null ||
        die 'python3 cannot create virtual environments: install the venv module' \
            "(Debian/Ubuntu: apt-get install python3-venv)"
}

# pip install, without the warnings about absent local index directories that a machine-wide
# pip configuration can cause (hundreds of lines that hide the ones that matter).
pip_install() {
    local venv=$1
    shift
    "$venv/bin/python" -m pip install --quiet "$@" \
        2> >(grep -v "^WARNING: Location 'file:.*' is ignored: it is neither a file nor a directory" >&2)
}

# Create or update .venv-<distro> so that it holds this package (editable) and every extra.
ensure_venv() {
    local distro=$1 venv=$2
    local stamp="$venv/.wbc_control-install"
    local wanted
    wanted="$distro $EXTRAS $(sha256sum setup.py | cut -d' ' -f1)"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
        return
    fi
    if [[ ! -x "$venv/bin/python" ]]; then
        check_python
        echo "run.sh: creating $venv" >&2
        if ! python3 -m venv "$venv"; then
            rm -rf "$venv"
            die "could not create $venv (Debian/Ubuntu: apt-get install python3-venv)"
        fi
    fi
    echo "run.sh: installing wbc_control[$EXTRAS,$distro] into $venv" >&2
    local start=$SECONDS
    rm -f "$stamp"
    pip_install "$venv" --upgrade pip
    pip_install "$venv" -e ".[$EXTRAS,$distro]"
    echo "$wanted" >"$stamp"
    echo "run.sh: installed in $((SECONDS - start)) s" >&2
}

# The environment must be the venv alone: a sourced ROS 2 install (or a process started from the
# other distribution's venv) would put its own rclpy and C libraries in front of the wheels. The
# ROS wheels re-exec Python once with their library directories in LD_LIBRARY_PATH and mark that
# with _ROS_WHEELS_BOOTSTRAP_COMPLETE; both must start clean so each venv sets its own.
isolate_environment() {
    if [[ -n ${AMENT_PREFIX_PATH:-} || -n ${ROS_DISTRO:-} ]]; then
        echo "run.sh: ignoring the sourced ROS 2 environment${ROS_DISTRO:+ ($ROS_DISTRO)}" >&2
    fi
    unset PYTHONPATH PYTHONHOME LD_LIBRARY_PATH _ROS_WHEELS_BOOTSTRAP_COMPLETE \
        AMENT_PREFIX_PATH COLCON_PREFIX_PATH CMAKE_PREFIX_PATH ROS_DISTRO ROS_VERSION \
        ROS_PYTHON_VERSION VIRTUAL_ENV
}

main() {
    [[ $# -ge 1 ]] || {
        usage >&2
        exit 2
    }
    local command=$1
    shift
    local distro=${WBC_ROS_DISTRO:-kilted}
    case ${1:-} in
        --distro)
            [[ $# -ge 2 ]] || die '--distro needs a value: kilted or jazzy'
            distro=$2
            shift 2
            ;;
        --distro=*)
            distro=${1#--distro=}
            shift
            ;;
    esac
    [[ " $DISTROS " == *" $distro "* ]] || die "unknown ROS 2 distribution '$distro' (one of: $DISTROS)"

    cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
    local venv="$PWD/.venv-$distro"

    isolate_environment
    case $command in
        test | demo) ensure_venv "$distro" "$venv" ;;
        -h | --help | help)
            usage
            exit 0
            ;;
        *)
            usage >&2
            exit 2
            ;;
    esac

    export VIRTUAL_ENV=$venv
    export PATH="$venv/bin:$PATH"
    export WBC_ROS_DISTRO=$distro

    if [[ $command == demo ]]; then
        exec wbc_demo "$@"
    fi

    echo "run.sh: running the tests on ROS 2 $distro" >&2
    local status=0
    python -m pytest -q "$@" || status=$?
    if [[ $status -eq 5 ]]; then
        echo "run.sh: pytest ran no tests (none collected, or all deselected): that is a failure" >&2
        exit 1
    fi
    exit "$status"
}

main "$@"
