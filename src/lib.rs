//! etcdlat
