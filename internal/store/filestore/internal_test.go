package filestore

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestFSErrorCodes(t *testing.T) {
	t.Parallel()
	const path = "/store/preview/pr-1/lease.json"
	for _, tc := range []struct {
		errno unix.Errno
		want  errcode.Code
	}{
		{unix.EACCES, errcode.StorePermission},
		{unix.EPERM, errcode.StorePermission},
		{unix.ENOSPC, errcode.StoreUnavailable},
		{unix.EIO, errcode.StoreUnavailable},
		{unix.EROFS, errcode.StoreUnavailable},
		{unix.ENOTDIR, errcode.StoreUnavailable},
	} {
		err := fsError("write", path, &fs.PathError{Op: "open", Path: path, Err: tc.errno})
		e := errcode.As(err)
		if e.Code != tc.want {
			t.Errorf("%v: code %s, want %s", tc.errno, e.Code, tc.want)
		}
		if strings.Count(e.Message, path) != 1 {
			t.Errorf("%v: message %q should name the path once", tc.errno, e.Message)
		}
		if e.Details["path"] != path {
			t.Errorf("%v: details %v lack the path", tc.errno, e.Details)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			t.Errorf("%v: the original *fs.PathError is not in the chain", tc.errno)
		}
	}

	err := fsError("replace", path, &os.LinkError{Op: "rename", Old: path + ".tmp", New: path, Err: unix.EACCES})
	if e := errcode.As(err); e.Code != errcode.StorePermission || strings.Count(e.Message, path) != 1 {
		t.Errorf("rename failure = %v, want STORE_PERMISSION naming the path once", err)
	}
}
